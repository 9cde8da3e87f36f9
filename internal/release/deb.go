package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the "deb" packager
	"github.com/goreleaser/nfpm/v2/files"
)

// writeDeb packages one Linux binary as mcphost_VERSION_ARCH.deb, with the
// systemd unit, the default config and the example tool plugin it serves,
// all from deploy/package.
func (r *release) writeDeb(goarch, bin, wasm string) (string, error) {
	pkg := filepath.Join(r.repo, "deploy", "package")
	file := func(src, dst string, mode os.FileMode) *files.Content {
		return &files.Content{Source: src, Destination: dst, FileInfo: &files.ContentFileInfo{Mode: mode, MTime: r.time}}
	}
	config := file(filepath.Join(pkg, "config.hcl"), "/etc/mcphost/config.hcl", 0o644)
	config.Type = files.TypeConfigNoReplace // an upgrade keeps the operator's edits
	info := &nfpm.Info{
		Name:        "mcphost",
		Arch:        goarch,
		Platform:    "linux",
		Version:     r.version,
		Section:     "net",
		Priority:    "optional",
		Maintainer:  "mcphost project <https://github.com/mcphost-project/mcphost>",
		Description: "MCP gateway with WebAssembly policy plugins\nmcphost serves the tools of many upstream MCP servers as one MCP server,\nwith policies that run as sandboxed Wasm plugins.",
		Homepage:    "https://github.com/mcphost-project/mcphost",
		MTime:       r.time,
		Overridables: nfpm.Overridables{
			Contents: files.Contents{
				file(bin, "/usr/bin/mcphost", 0o755),
				config,
				file(filepath.Join(pkg, "mcphost.service"), "/usr/lib/systemd/system/mcphost.service", 0o644),
				file(filepath.Join(pkg, "client.hcl"), "/usr/share/mcphost/client.hcl", 0o644),
				file(wasm, "/usr/share/mcphost/tools/jsoncsv.wasm", 0o644),
			},
			Scripts: nfpm.Scripts{
				PostInstall: filepath.Join(pkg, "postinst"),
				PreRemove:   filepath.Join(pkg, "prerm"),
				PostRemove:  filepath.Join(pkg, "postrm"),
			},
		},
	}
	info = nfpm.WithDefaults(info)
	if err := nfpm.PrepareForPackager(info, "deb"); err != nil {
		return "", fmt.Errorf("the .deb for %s: %w", goarch, err)
	}
	packager, err := nfpm.Get("deb")
	if err != nil {
		return "", err
	}
	out := filepath.Join(r.out, packager.ConventionalFileName(info))
	f, err := os.Create(out)
	if err != nil {
		return "", err
	}
	if err := packager.Package(info, f); err != nil {
		f.Close()
		return "", fmt.Errorf("the .deb for %s: %w", goarch, err)
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return out, os.Chtimes(out, r.time, r.time)
}
