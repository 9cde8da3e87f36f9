package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/uuid"
)

// writeSBOM writes BIN.cdx.json, a CycloneDX SBOM of one binary, from the
// build information the Go toolchain embeds in it (what `go version -m BIN`
// prints): the module, every module linked in at its version, and the Go
// standard library at the toolchain's version.
func writeSBOM(bin string, r *release) error {
	bom, err := sbom(bin, r.version, r.time)
	if err != nil {
		return err
	}
	f, err := os.Create(bin + ".cdx.json")
	if err != nil {
		return err
	}
	enc := cdx.NewBOMEncoder(f, cdx.BOMFileFormatJSON)
	enc.SetPretty(true)
	if err := enc.Encode(bom); err != nil {
		f.Close()
		return fmt.Errorf("writing the SBOM of %s: %w", filepath.Base(bin), err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Chtimes(bin+".cdx.json", r.time, r.time)
}

// sbom reads bin's build information and makes its bill of materials.
// The dependency graph is flat (mcphost depends on every module): a binary
// records which modules it links, not which module required which.
func sbom(bin, version string, date time.Time) (*cdx.BOM, error) {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("reading the build information of %s: %w", filepath.Base(bin), err)
	}
	sum, err := fileSHA256(bin)
	if err != nil {
		return nil, err
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	qualifiers := url.Values{"goos": {settings["GOOS"]}, "goarch": {settings["GOARCH"]}}
	main := cdx.Component{
		Type:       cdx.ComponentTypeApplication,
		Name:       bi.Main.Path,
		Version:    "v" + version,
		PackageURL: purl(bi.Main.Path, "v"+version) + "?" + qualifiers.Encode(),
		Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: sum}},
	}
	main.BOMRef = main.PackageURL
	var props []cdx.Property
	for _, s := range bi.Settings {
		props = append(props, cdx.Property{Name: "go:build:" + s.Key, Value: s.Value})
	}
	if len(props) > 0 {
		main.Properties = &props
	}

	goVersion := strings.TrimPrefix(bi.GoVersion, "go")
	components := []cdx.Component{{
		BOMRef:     purl("stdlib", "v"+goVersion),
		Type:       cdx.ComponentTypeLibrary,
		Name:       "stdlib",
		Version:    "v" + goVersion,
		PackageURL: purl("stdlib", "v"+goVersion),
	}}
	for _, d := range bi.Deps {
		c := cdx.Component{Type: cdx.ComponentTypeLibrary, Name: d.Path, Version: d.Version}
		if d.Sum != "" {
			// go.sum's h1: hash, which `go mod verify` checks; not a hash
			// of a file, so a property rather than a CycloneDX hash.
			c.Properties = &[]cdx.Property{{Name: "go:module:sum", Value: d.Sum}}
		}
		switch {
		case d.Replace != nil && (strings.HasPrefix(d.Replace.Path, "./") || strings.HasPrefix(d.Replace.Path, "../") || filepath.IsAbs(d.Replace.Path)):
			// A directory of this repository (the plugin SDK module,
			// ./abi, until its version is published): the version go.mod
			// requires, and whose code it is.
			c.Description = "built from " + d.Replace.Path + " in the source of mcphost v" + version
		case d.Replace != nil:
			// The code linked is the replacement's.
			c.Name, c.Version = d.Replace.Path, d.Replace.Version
			c.Description = "replaces " + d.Path + " " + d.Version
			if d.Replace.Sum != "" {
				c.Properties = &[]cdx.Property{{Name: "go:module:sum", Value: d.Replace.Sum}}
			}
		}
		c.PackageURL = purl(c.Name, c.Version)
		c.BOMRef = c.PackageURL
		components = append(components, c)
	}
	var refs []string
	for _, c := range components {
		refs = append(refs, c.BOMRef)
	}
	slices.Sort(refs)

	bom := cdx.NewBOM()
	// The same binary gets the same serial number, so that a rebuilt
	// release is byte for byte the same.
	bom.SerialNumber = "urn:uuid:" + uuid.NewSHA1(uuid.NameSpaceURL, []byte("sha256:"+sum)).String()
	bom.Metadata = &cdx.Metadata{
		Timestamp: date.UTC().Format(time.RFC3339),
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{
			Type: cdx.ComponentTypeApplication,
			Name: "github.com/mcphost-project/mcphost/internal/release",
		}}},
		Component: &main,
	}
	bom.Components = &components
	bom.Dependencies = &[]cdx.Dependency{{Ref: main.BOMRef, Dependencies: &refs}}
	return bom, nil
}

// purl is the package URL of a Go module (purl-spec's golang type): the
// path's segments escaped, the version as Go writes it.
func purl(path, version string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "pkg:golang/" + strings.Join(segs, "/") + "@" + url.PathEscape(version)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeSums writes SHA256SUMS, in sha256sum's format ("HASH  NAME"), of
// every file in dir; a folder (the OCI layout) is summed by its
// index.json, which names every blob by its digest.
func writeSums(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			name = filepath.Join(name, "index.json")
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				return fmt.Errorf("SHA256SUMS: %s is a folder without index.json", e.Name())
			}
		}
		sum, err := fileSHA256(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, filepath.ToSlash(name))
	}
	return os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(b.String()), 0o644)
}
