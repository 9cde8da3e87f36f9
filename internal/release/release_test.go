package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// testRelease is a release of this repository into a temporary folder,
// with made-up stand-ins for the binary and the tool plugin.
func testRelease(t *testing.T) (r *release, bin, wasm string) {
	t.Helper()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	r = &release{
		repo: repo, out: t.TempDir(), version: "1.2.0-rc.1",
		commit: "0123456789abcdef0123456789abcdef01234567",
		time:   time.Date(2026, 11, 28, 7, 0, 0, 0, time.UTC), log: io.Discard,
	}
	dir := t.TempDir()
	bin, wasm = filepath.Join(dir, "mcphost"), filepath.Join(dir, "jsoncsv.wasm")
	if err := os.WriteFile(bin, []byte("#!/bin/false\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wasm, []byte("\x00asm\x01\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	return r, bin, wasm
}

// TestSBOM reads this test's own binary, which has build information and
// dependencies like any Go binary.
func TestSBOM(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	date := time.Date(2026, 11, 28, 7, 0, 0, 0, time.UTC)
	bom, err := sbom(exe, "1.2.0", date)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON).Encode(bom); err != nil {
		t.Fatal(err)
	}
	var got cdx.BOM
	if err := cdx.NewBOMDecoder(&buf, cdx.BOMFileFormatJSON).Decode(&got); err != nil {
		t.Fatalf("the SBOM does not decode: %v", err)
	}
	if got.SpecVersion != cdx.SpecVersion1_7 || !strings.HasPrefix(got.SerialNumber, "urn:uuid:") || got.Metadata.Timestamp != "2026-11-28T07:00:00Z" {
		t.Errorf("header: spec %v, serial %q, timestamp %q", got.SpecVersion, got.SerialNumber, got.Metadata.Timestamp)
	}
	main := got.Metadata.Component
	if main.Type != cdx.ComponentTypeApplication || main.Version != "v1.2.0" ||
		!strings.HasPrefix(main.PackageURL, "pkg:golang/github.com/mcphost-project/mcphost/internal/release@v1.2.0?goarch=") ||
		main.Hashes == nil || len((*main.Hashes)[0].Value) != 64 {
		t.Errorf("main component: %+v", main)
	}
	byName := map[string]cdx.Component{}
	for _, c := range *got.Components {
		byName[c.Name] = c
	}
	cyclonedx, ok := byName["github.com/CycloneDX/cyclonedx-go"]
	if !ok || cyclonedx.PackageURL != "pkg:golang/github.com/CycloneDX/cyclonedx-go@"+cyclonedx.Version || cyclonedx.Properties == nil {
		t.Errorf("cyclonedx-go, which this binary links: %+v", cyclonedx)
	}
	if std, ok := byName["stdlib"]; !ok || !strings.HasPrefix(std.PackageURL, "pkg:golang/stdlib@v1.") {
		t.Errorf("stdlib: %+v", std)
	}
	deps := *got.Dependencies
	if len(deps) != 1 || deps[0].Ref != main.BOMRef || len(*deps[0].Dependencies) != len(*got.Components) {
		t.Errorf("dependencies: %+v", deps)
	}
	// The same binary, the same SBOM: a rebuilt release is identical.
	again, err := sbom(exe, "1.2.0", date)
	if err != nil || again.SerialNumber != bom.SerialNumber {
		t.Errorf("serial number %q, then %q (%v)", bom.SerialNumber, again.SerialNumber, err)
	}
}

func TestPurl(t *testing.T) {
	for path, want := range map[string]string{
		"github.com/CycloneDX/cyclonedx-go": "pkg:golang/github.com/CycloneDX/cyclonedx-go@v0.12.0",
		"example.com/a b/c":                 "pkg:golang/example.com/a%20b/c@v0.12.0",
	} {
		if got := purl(path, "v0.12.0"); got != want {
			t.Errorf("purl(%q) = %q; want %q", path, got, want)
		}
	}
}

func TestVersionForm(t *testing.T) {
	for v, ok := range map[string]bool{
		"1.2.0": true, "1.2.0-rc.1": true, "0.0.0-dev+5f8de9d0a1b2": true,
		"1.2": false, "v1.2.0": false, "1.2.0 ": false, "1.2.0/x": false, "": false,
	} {
		if versionRE.MatchString(v) != ok {
			t.Errorf("version %q: match %v, want %v", v, !ok, ok)
		}
	}
}

// TestImage makes the images and reads them back: the OCI layout's
// platforms, and one docker-archive's config and files.
func TestImage(t *testing.T) {
	r, bin, wasm := testRelease(t)
	bins := map[string]string{"linux/amd64": bin, "linux/arm64": bin}
	if err := r.writeImages([]string{"linux/amd64", "linux/arm64"}, bins, wasm); err != nil {
		t.Fatal(err)
	}
	oci, err := layout.FromPath(filepath.Join(r.out, "mcphost_1.2.0-rc.1_image.oci"))
	if err != nil {
		t.Fatal(err)
	}
	idx, err := oci.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 2 || im.Manifests[0].Platform.Architecture != "amd64" || im.Manifests[1].Platform.Architecture != "arm64" ||
		im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "1.2.0-rc.1" {
		t.Fatalf("the layout's index: %+v", im.Manifests)
	}

	img, err := tarball.ImageFromPath(filepath.Join(r.out, "mcphost_1.2.0-rc.1_linux_arm64.image.tar"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if cf.OS != "linux" || cf.Architecture != "arm64" || c.User != "65532:65532" ||
		strings.Join(c.Entrypoint, " ") != "/usr/bin/mcphost" || strings.Join(c.Cmd, " ") != "run /etc/mcphost/config.hcl" ||
		len(c.ExposedPorts) != 1 || c.Labels["org.opencontainers.image.revision"] != r.commit || !cf.Created.Equal(r.time) {
		t.Errorf("config: %s/%s %+v", cf.OS, cf.Architecture, c)
	}

	type entry struct {
		uid  int
		mode int64
		body string
	}
	files := map[string]entry{}
	tr := tar.NewReader(mutate.Extract(img))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files["/"+strings.TrimSuffix(h.Name, "/")] = entry{h.Uid, h.Mode, string(b)}
		if !h.ModTime.Equal(r.time) {
			t.Errorf("%s: time %v", h.Name, h.ModTime)
		}
	}
	config, _ := os.ReadFile(filepath.Join(r.repo, "deploy", "package", "image.hcl"))
	for name, want := range map[string]entry{
		"/usr/bin/mcphost":                      {0, 0o755, "#!/bin/false\n"},
		"/etc/mcphost/config.hcl":               {0, 0o644, string(config)},
		"/usr/share/mcphost/tools/jsoncsv.wasm": {0, 0o644, "\x00asm\x01\x00\x00\x00"},
		"/home/nonroot":                         {65532, 0o700, ""},
		"/var/cache/mcphost":                    {65532, 0o755, ""},
		"/tmp":                                  {0, 0o1777, ""},
	} {
		if got, ok := files[name]; !ok || got != want {
			t.Errorf("%s: %+v, %v; want %+v", name, got, ok, want)
		}
	}
	if !strings.Contains(files["/etc/passwd"].body, "nonroot:x:65532:65532:") || !strings.Contains(files["/etc/group"].body, "nonroot:x:65532:") {
		t.Errorf("passwd %q, group %q", files["/etc/passwd"].body, files["/etc/group"].body)
	}
	if ca := files[caFile].body; !strings.Contains(ca, "BEGIN CERTIFICATE") {
		t.Errorf("%s: %d bytes, no certificate", caFile, len(ca))
	}
	if !strings.Contains(string(config), `source = "/usr/share/mcphost/tools/jsoncsv.wasm"`) || !strings.Contains(string(config), `"/var/cache/mcphost"`) {
		t.Error("deploy/package/image.hcl no longer serves the tool plugin the image ships, or caches elsewhere")
	}
}

// TestDeb makes a .deb and reads it back with dpkg-deb.
func TestDeb(t *testing.T) {
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("no dpkg-deb here")
	}
	r, bin, wasm := testRelease(t)
	deb, err := r.writeDeb("arm64", bin, wasm)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(deb) != "mcphost_1.2.0~rc.1_arm64.deb" {
		t.Errorf("file name %s", filepath.Base(deb))
	}
	field := func(name string) string {
		out, err := exec.Command("dpkg-deb", "-f", deb, name).Output()
		if err != nil {
			t.Fatalf("dpkg-deb -f %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	if field("Package") != "mcphost" || field("Version") != "1.2.0~rc.1" || field("Architecture") != "arm64" {
		t.Errorf("control: %s %s %s", field("Package"), field("Version"), field("Architecture"))
	}
	out, err := exec.Command("dpkg-deb", "-c", deb).Output()
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{} // path: mode owner size date time
	for line := range strings.Lines(string(out)) {
		if f := strings.Fields(line); len(f) == 6 {
			listed[f[5]] = strings.Join(f[:5], " ")
		}
	}
	for path, want := range map[string]string{
		"./usr/bin/mcphost":                        "-rwxr-xr-x root/root 13 2026-11-28 07:00",
		"./etc/mcphost/config.hcl":                 "-rw-r--r-- root/root",
		"./usr/lib/systemd/system/mcphost.service": "-rw-r--r-- root/root",
		"./usr/share/mcphost/client.hcl":           "-rw-r--r-- root/root",
		"./usr/share/mcphost/tools/jsoncsv.wasm":   "-rw-r--r-- root/root 8",
	} {
		if !strings.HasPrefix(listed[path], want) {
			t.Errorf("dpkg-deb -c: %s is %q, want %q...:\n%s", path, listed[path], want, out)
		}
	}
	ctl := t.TempDir()
	if err := exec.Command("dpkg-deb", "-e", deb, ctl).Run(); err != nil {
		t.Fatal(err)
	}
	conffiles, _ := os.ReadFile(filepath.Join(ctl, "conffiles"))
	if strings.TrimSpace(string(conffiles)) != "/etc/mcphost/config.hcl" {
		t.Errorf("conffiles: %q", conffiles)
	}
	for _, s := range []string{"postinst", "prerm", "postrm"} {
		if fi, err := os.Stat(filepath.Join(ctl, s)); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("maintainer script %s: %v", s, err)
		}
	}
}

func TestWriteSums(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "x.oci"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x.oci", "index.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeSums(dir); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	want := "87428fc522803d31065e7bce3cf03fe475096631e5e07bbd7a0fde60c4cf25c7  a\n" +
		"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a  x.oci/index.json\n"
	if string(got) != want {
		t.Errorf("SHA256SUMS:\n%s\nwant:\n%s", got, want)
	}
}
