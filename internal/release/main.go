// Command release makes mcphost's release artifacts in one folder: static
// binaries for each platform with their SHA-256 sums and CycloneDX SBOMs,
// a .deb with a systemd unit and a default config, and an OCI image built
// without a container daemon. .ci/release runs it; docs/DEPLOY.md says how
// a release is cut.
//
// It is a module of its own so that its dependencies (nfpm,
// go-containerregistry, cyclonedx-go) stay out of the gateway's go.mod and
// binary.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// allTargets are the platforms released, GOOS/GOARCH.
var allTargets = []string{
	"linux/amd64", "linux/arm64",
	"darwin/amd64", "darwin/arm64",
	"windows/amd64", "windows/arm64",
}

// A release is what one run makes.
type release struct {
	repo    string    // the repository's root
	out     string    // the folder made (dist/)
	version string    // without a leading "v": 1.2.0
	commit  string    // the full git commit
	time    time.Time // the commit's time: every file's and the SBOM's date
	log     io.Writer
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

const usage = `usage: release [-repo DIR] [-out DIR] [-version V] [-targets LIST]

Makes in -out (default REPO/dist, emptied first):
  mcphost_V_OS_ARCH[.exe]          static binaries (CGO_ENABLED=0, -trimpath),
                                   with the version and commit stamped
  mcphost_V_OS_ARCH[.exe].cdx.json CycloneDX SBOM of each binary
  mcphost_V_ARCH.deb               the Linux binaries packaged, with a systemd unit
  mcphost_V_linux_ARCH.image.tar   the image for one platform, docker-archive (podman load)
  mcphost_V_image.oci/             the images of every Linux platform, one OCI layout
  SHA256SUMS                       the SHA-256 of every file above (the layout's
                                   index.json stands for it)
`

func run(ctx context.Context, args []string, log io.Writer) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(log)
	fs.Usage = func() { fmt.Fprint(log, usage); fs.PrintDefaults() }
	repo := fs.String("repo", "", "the mcphost repository's root (default: found from the working directory)")
	out := fs.String("out", "", "the folder to make (default: REPO/dist)")
	version := fs.String("version", "", `the version to stamp, "1.2.0" or "v1.2.0" (default: "git describe --tags", else version.Version's "0.0.0-dev+COMMIT")`)
	targets := fs.String("targets", strings.Join(allTargets, ","), "comma-separated GOOS/GOARCH to build; the .deb and the image are made for the linux ones")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	r := &release{repo: *repo, out: *out, log: log}
	if err := r.init(ctx, *version); err != nil {
		return err
	}
	var list []string
	for t := range strings.SplitSeq(*targets, ",") {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		if !slices.Contains(allTargets, t) {
			return fmt.Errorf("-targets: %q is not one of %s", t, strings.Join(allTargets, ", "))
		}
		list = append(list, t)
	}
	if len(list) == 0 {
		return errors.New("-targets: no target")
	}
	return r.make(ctx, list)
}

// init finds the repository, the commit and the version, and empties out.
func (r *release) init(ctx context.Context, version string) error {
	if r.repo == "" {
		top, err := r.git(ctx, "rev-parse", "--show-toplevel")
		if err != nil {
			return fmt.Errorf("finding the repository (run inside it, or give -repo): %w", err)
		}
		r.repo = top
	}
	if _, err := os.Stat(filepath.Join(r.repo, "cmd", "mcphost")); err != nil {
		return fmt.Errorf("-repo %s is not mcphost's repository: %w", r.repo, err)
	}
	var err error
	if r.commit, err = r.git(ctx, "rev-parse", "HEAD"); err != nil {
		return err
	}
	ct, err := r.git(ctx, "show", "-s", "--format=%ct", "HEAD")
	if err != nil {
		return err
	}
	var sec int64
	if _, err := fmt.Sscan(ct, &sec); err != nil {
		return fmt.Errorf("the commit's time %q: %w", ct, err)
	}
	r.time = time.Unix(sec, 0).UTC()
	if version == "" {
		// A tag on HEAD names the release; anything else is a development
		// build of the commit.
		if tag, err := r.git(ctx, "describe", "--tags", "--exact-match", "HEAD"); err == nil {
			version = tag
		} else {
			version = "0.0.0-dev+" + r.commit[:12]
		}
	}
	r.version = strings.TrimPrefix(version, "v")
	if !versionRE.MatchString(r.version) {
		return fmt.Errorf("version %q is not of the form 1.2.3, 1.2.3-rc.1 or 1.2.3+meta", version)
	}
	if r.out == "" {
		r.out = filepath.Join(r.repo, "dist")
	}
	if err := os.RemoveAll(r.out); err != nil {
		return err
	}
	return os.MkdirAll(r.out, 0o755)
}

// versionRE is semantic versioning, which Debian's version order, OCI tags
// (after "+" becomes "_") and Go module tags all accept.
var versionRE = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

func (r *release) make(ctx context.Context, targets []string) error {
	start := time.Now()
	fmt.Fprintf(r.log, "release: mcphost %s, commit %s, into %s\n", r.version, r.commit, r.out)
	bins := map[string]string{} // target: path
	for _, t := range targets {
		goos, goarch, _ := strings.Cut(t, "/")
		t0 := time.Now()
		bin, err := r.buildBinary(ctx, goos, goarch)
		if err != nil {
			return err
		}
		if err := writeSBOM(bin, r); err != nil {
			return err
		}
		bins[t] = bin
		fmt.Fprintf(r.log, "release: %s and its SBOM (%.1fs)\n", filepath.Base(bin), time.Since(t0).Seconds())
	}
	var linux []string
	for _, t := range targets {
		if strings.HasPrefix(t, "linux/") {
			linux = append(linux, t)
		}
	}
	if len(linux) > 0 {
		t0 := time.Now()
		wasm, err := r.buildTool(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(r.log, "release: the example tool plugin (%.1fs)\n", time.Since(t0).Seconds())
		for _, t := range linux {
			_, goarch, _ := strings.Cut(t, "/")
			deb, err := r.writeDeb(goarch, bins[t], wasm)
			if err != nil {
				return err
			}
			fmt.Fprintf(r.log, "release: %s\n", filepath.Base(deb))
		}
		t0 = time.Now()
		if err := r.writeImages(linux, bins, wasm); err != nil {
			return err
		}
		fmt.Fprintf(r.log, "release: the images (%.1fs)\n", time.Since(t0).Seconds())
		if err := os.Remove(wasm); err != nil {
			return err
		}
	}
	if err := writeSums(r.out); err != nil {
		return err
	}
	fmt.Fprintf(r.log, "release: done in %.1fs\n", time.Since(start).Seconds())
	return nil
}

// buildBinary builds cmd/mcphost for one platform, static and stamped.
func (r *release) buildBinary(ctx context.Context, goos, goarch string) (string, error) {
	name := fmt.Sprintf("mcphost_%s_%s_%s", r.version, goos, goarch)
	if goos == "windows" {
		name += ".exe"
	}
	out := filepath.Join(r.out, name)
	ldflags := strings.Join([]string{
		"-s", "-w",
		"-X", "github.com/mcphost-project/mcphost/internal/version.Version=" + r.version,
		"-X", "main.commit=" + r.commit,
	}, " ")
	// -buildvcs=false: the commit is stamped above, and the VCS record
	// would otherwise say "modified" for a tree with untracked files.
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out, "./cmd/mcphost")
	cmd.Dir = r.repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	cmd.Stdout, cmd.Stderr = r.log, r.log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building %s: %w", name, err)
	}
	return out, os.Chtimes(out, r.time, r.time)
}

// buildTool builds the example tool plugin that the default configs serve,
// the same .wasm for every platform.
func (r *release) buildTool(ctx context.Context) (string, error) {
	out := filepath.Join(r.out, "jsoncsv.wasm")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-buildmode=c-shared", "-o", out, "./examples/tools/jsoncsv")
	cmd.Dir = r.repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=wasip1", "GOARCH=wasm")
	cmd.Stdout, cmd.Stderr = r.log, r.log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building the example tool plugin: %w", err)
	}
	return out, nil
}

func (r *release) git(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = r.repo
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
