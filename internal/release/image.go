package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's user, as distroless's "nonroot" (Kubernetes' runAsNonRoot
// checks the number; deploy/kubernetes runs as it).
const (
	imageUID  = 65532
	imagePort = "7700/tcp"
	// caFile is where Debian keeps the CA bundle, and so where the base
	// layer takes it from and puts it; Go's crypto/x509 looks there.
	caFile = "/etc/ssl/certs/ca-certificates.crt"
)

// writeImages makes the image of each Linux target: one OCI layout with
// every platform (mcphost_VERSION_image.oci/), and a docker-archive tarball
// of each (mcphost_VERSION_linux_ARCH.image.tar, for `podman load` or
// `docker load`). No daemon, no registry: the base is made here.
func (r *release) writeImages(linux []string, bins map[string]string, wasm string) error {
	base, err := r.baseLayer()
	if err != nil {
		return err
	}
	oci, err := layout.Write(filepath.Join(r.out, fmt.Sprintf("mcphost_%s_image.oci", r.version)), empty.Index)
	if err != nil {
		return err
	}
	tag, err := name.NewTag("mcphost:" + strings.ReplaceAll(r.version, "+", "_"))
	if err != nil {
		return fmt.Errorf("the image's tag: %w", err)
	}
	for _, t := range linux {
		_, goarch, _ := strings.Cut(t, "/")
		img, err := r.image(goarch, base, bins[t], wasm)
		if err != nil {
			return err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return err
		}
		if err := oci.AppendImage(img,
			layout.WithPlatform(*cf.Platform()),
			layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag.TagStr()}),
		); err != nil {
			return fmt.Errorf("the OCI layout, linux/%s: %w", goarch, err)
		}
		archive := filepath.Join(r.out, fmt.Sprintf("mcphost_%s_linux_%s.image.tar", r.version, goarch))
		if err := tarball.WriteToFile(archive, tag, img); err != nil {
			return fmt.Errorf("the image tarball, linux/%s: %w", goarch, err)
		}
		if err := os.Chtimes(archive, r.time, r.time); err != nil {
			return err
		}
	}
	return nil
}

// image is mcphost for one architecture: the base layer, then a layer with
// the binary, its config and the example tool plugin that config serves.
func (r *release) image(goarch string, base v1.Layer, bin, wasm string) (v1.Image, error) {
	t := newTarLayer(r.time)
	t.dir("/usr/", 0, 0o755)
	t.dir("/usr/bin/", 0, 0o755)
	if err := t.file("/usr/bin/mcphost", 0, 0o755, bin); err != nil {
		return nil, err
	}
	t.dir("/etc/mcphost/", 0, 0o755)
	if err := t.file("/etc/mcphost/config.hcl", 0, 0o644, filepath.Join(r.repo, "deploy", "package", "image.hcl")); err != nil {
		return nil, err
	}
	t.dir("/usr/share/", 0, 0o755)
	t.dir("/usr/share/mcphost/", 0, 0o755)
	t.dir("/usr/share/mcphost/tools/", 0, 0o755)
	if err := t.file("/usr/share/mcphost/tools/jsoncsv.wasm", 0, 0o644, wasm); err != nil {
		return nil, err
	}
	app, err := t.layer()
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: r.time}
	img, err := mutate.Append(empty.Image,
		mutate.Addendum{Layer: base, History: v1.History{Created: created, CreatedBy: "mcphost release: base (passwd, group, CA certificates)"}},
		mutate.Addendum{Layer: app, History: v1.History{Created: created, CreatedBy: "mcphost release: mcphost " + r.version}},
	)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = created
	cf.OS, cf.Architecture = "linux", goarch
	if goarch == "arm64" {
		cf.Variant = "v8"
	}
	cf.Config = v1.Config{
		User:         fmt.Sprintf("%d:%d", imageUID, imageUID),
		Entrypoint:   []string{"/usr/bin/mcphost"},
		Cmd:          []string{"run", "/etc/mcphost/config.hcl"},
		ExposedPorts: map[string]struct{}{imagePort: {}},
		Env:          []string{"PATH=/usr/bin:/bin", "SSL_CERT_FILE=" + caFile},
		WorkingDir:   "/home/nonroot",
		StopSignal:   "SIGTERM",
		Labels: map[string]string{
			"org.opencontainers.image.title":    "mcphost",
			"org.opencontainers.image.version":  r.version,
			"org.opencontainers.image.revision": r.commit,
			"org.opencontainers.image.source":   "https://github.com/mcphost-project/mcphost",
			"org.opencontainers.image.created":  r.time.Format(time.RFC3339),
		},
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	return img, nil
}

// baseLayer is the minimal filesystem mcphost needs beneath it, made here
// rather than pulled: a root and a non-root user (the Go resolver and
// os/user read /etc/passwd and /etc/group), /etc/nsswitch.conf (so that
// /etc/hosts is read before DNS), the build machine's CA certificates (for
// HTTPS upstreams and OAuth), and /tmp and writable home and cache folders
// for the user. No shell, no libc: the binary is static. No tzdata either:
// mcphost formats times in UTC.
func (r *release) baseLayer() (v1.Layer, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("the image's CA certificates are the build machine's, and it has none (apt-get install ca-certificates): %w", err)
	}
	t := newTarLayer(r.time)
	t.dir("/etc/", 0, 0o755)
	t.bytes("/etc/passwd", 0, 0o644, []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", imageUID, imageUID)))
	t.bytes("/etc/group", 0, 0o644, []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", imageUID)))
	t.bytes("/etc/nsswitch.conf", 0, 0o644, []byte("hosts: files dns\n"))
	t.dir("/etc/ssl/", 0, 0o755)
	t.dir("/etc/ssl/certs/", 0, 0o755)
	t.bytes(caFile, 0, 0o644, ca)
	t.dir("/root/", 0, 0o700)
	t.dir("/home/", 0, 0o755)
	t.dir("/home/nonroot/", imageUID, 0o700)
	t.dir("/tmp/", 0, 0o1777)
	t.dir("/var/", 0, 0o755)
	t.dir("/var/cache/", 0, 0o755)
	t.dir("/var/cache/mcphost/", imageUID, 0o755)
	return t.layer()
}

// tarLayer writes one layer's tar, every entry with one time.
type tarLayer struct {
	buf  bytes.Buffer
	tw   *tar.Writer
	time time.Time
	err  error
}

func newTarLayer(t time.Time) *tarLayer {
	l := &tarLayer{time: t}
	l.tw = tar.NewWriter(&l.buf)
	return l
}

func (l *tarLayer) header(name string, typ byte, uid int, mode int64, size int64) {
	if l.err != nil {
		return
	}
	l.err = l.tw.WriteHeader(&tar.Header{
		Typeflag: typ, Name: strings.TrimPrefix(name, "/"), Mode: mode, Size: size,
		Uid: uid, Gid: uid, ModTime: l.time, Format: tar.FormatPAX,
	})
}

func (l *tarLayer) dir(name string, uid int, mode int64) { l.header(name, tar.TypeDir, uid, mode, 0) }

func (l *tarLayer) bytes(name string, uid int, mode int64, b []byte) {
	l.header(name, tar.TypeReg, uid, mode, int64(len(b)))
	if l.err == nil {
		_, l.err = l.tw.Write(b)
	}
}

func (l *tarLayer) file(name string, uid int, mode int64, src string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	l.bytes(name, uid, mode, b)
	return nil
}

// layer closes the tar and makes it an OCI layer, gzip-compressed.
func (l *tarLayer) layer() (v1.Layer, error) {
	if l.err == nil {
		l.err = l.tw.Close()
	}
	if l.err != nil {
		return nil, fmt.Errorf("an image layer: %w", l.err)
	}
	b := l.buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
