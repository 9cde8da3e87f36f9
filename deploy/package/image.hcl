# mcphost's configuration in its container image, at /etc/mcphost/config.hcl
# (the image's default command runs it). Mount your own over it:
#
#   podman run -p 7700:7700 -v ./config.hcl:/etc/mcphost/config.hcl:ro mcphost:VERSION
#
# Out of the box it serves one tool plugin, the example JSON/CSV converter,
# on every address of the container (publish the port on loopback unless
# you add listen.auth).

listen {
  http = "0.0.0.0:7700"
}

runtime {
  # Owned by the image's user (65532); an emptyDir under Kubernetes.
  cache_dir = "/var/cache/mcphost"
}

tools_plugin "data" {
  source = "/usr/share/mcphost/tools/jsoncsv.wasm"
}
