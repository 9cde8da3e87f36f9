package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/mcphost-project/mcphost/host/config"
)

// manifest is the part of a Kubernetes object that TestKubernetesManifests
// reads.
type manifest struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
	Spec       struct {
		MaxUnavailable int `yaml:"maxUnavailable"`
		Selector       struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Spec struct {
				TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
				Containers                    []struct {
					Args  []string `yaml:"args"`
					Ports []struct {
						Name          string `yaml:"name"`
						ContainerPort int    `yaml:"containerPort"`
					} `yaml:"ports"`
					ReadinessProbe struct {
						HTTPGet struct {
							Path string `yaml:"path"`
							Port string `yaml:"port"`
						} `yaml:"httpGet"`
					} `yaml:"readinessProbe"`
					Lifecycle struct {
						PreStop struct {
							Sleep struct {
								Seconds int `yaml:"seconds"`
							} `yaml:"sleep"`
						} `yaml:"preStop"`
					} `yaml:"lifecycle"`
					VolumeMounts []struct {
						Name      string `yaml:"name"`
						MountPath string `yaml:"mountPath"`
					} `yaml:"volumeMounts"`
				} `yaml:"containers"`
				Volumes []struct {
					Name      string `yaml:"name"`
					ConfigMap struct {
						Name string `yaml:"name"`
					} `yaml:"configMap"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
		Ports []struct {
			TargetPort string `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

func readManifests(t *testing.T, file string) []manifest {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "deploy", "kubernetes", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []manifest
	dec := yaml.NewDecoder(f)
	for {
		var m manifest
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out = append(out, m)
	}
}

// TestKubernetesManifests: deploy/kubernetes parses; the Deployment is
// ready on /healthz of the MCP port, mounts the ConfigMap where its args
// read the config, and gives the drain time before SIGKILL; the
// ConfigMap's HCL passes `mcphost validate`; the Services point at the
// MCP port.
func TestKubernetesManifests(t *testing.T) {
	cms := readManifests(t, "configmap.yaml")
	deps := readManifests(t, "deployment.yaml")
	svcs := readManifests(t, "service.yaml")
	if len(cms) != 1 || cms[0].Kind != "ConfigMap" || len(deps) != 1 || deps[0].Kind != "Deployment" || len(svcs) != 2 {
		t.Fatalf("want one ConfigMap, one Deployment, two Services; got %d, %d, %d", len(cms), len(deps), len(svcs))
	}
	hcl := cms[0].Data["config.hcl"]
	if hcl == "" {
		t.Fatal("the ConfigMap has no config.hcl")
	}

	// The HCL, with the Secret's variables set, passes the validator.
	t.Setenv("MCPHOST_STORE_URL", "postgres://mcphost:secret@db.example:5432/mcphost")
	t.Setenv("MCPHOST_STORE_KEY", "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=")
	t.Setenv("MCPHOST_OPERATOR_KEY", "operator-key-0123456789")
	cfg := filepath.Join(t.TempDir(), "config.hcl")
	if err := os.WriteFile(cfg, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := mcphost(t, "validate", cfg); code != 0 || strings.Contains(errOut, "arning") {
		t.Fatalf("mcphost validate of the ConfigMap's HCL: exit %d\n%s%s", code, out, errOut)
	}
	file, diags := config.Parse([]byte(hcl), cfg)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if file.Store == nil || file.Store.Driver != "postgres" || file.Store.Key == nil {
		t.Fatalf("the ConfigMap's store is not a keyed PostgreSQL: %+v", file.Store)
	}
	drain := file.Host.Listen.DrainTimeout
	if drain == 0 {
		drain = 20 * time.Second
	}

	pod := deps[0].Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	c := pod.Containers[0]
	mcpPort := ""
	for _, p := range c.Ports {
		if p.ContainerPort == 7700 {
			mcpPort = p.Name
		}
	}
	if mcpPort == "" || !strings.HasSuffix(file.Host.Listen.HTTP, ":7700") {
		t.Fatalf("the container's port 7700 is unnamed, or the config listens on %s", file.Host.Listen.HTTP)
	}
	if rp := c.ReadinessProbe.HTTPGet; rp.Path != "/healthz" || rp.Port != mcpPort {
		t.Errorf("readiness probe %s on %s, want /healthz on %s", rp.Path, rp.Port, mcpPort)
	}
	grace := time.Duration(pod.TerminationGracePeriodSeconds) * time.Second
	preStop := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	// The drain, then up to a second for streams and two to stop the
	// plugins, must end before the kubelet's SIGKILL.
	if grace < preStop+drain+5*time.Second {
		t.Errorf("terminationGracePeriodSeconds %v leaves no room for the preStop sleep %v and drain_timeout %v", grace, preStop, drain)
	}
	// The args read the config where the ConfigMap is mounted.
	if len(c.Args) < 2 || c.Args[0] != "run" {
		t.Fatalf("args %q", c.Args)
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.ConfigMap.Name == cms[0].Metadata.Name && c.Args[1] == m.MountPath+"/config.hcl" {
				mounted = true
			}
		}
	}
	if !mounted {
		t.Errorf("%s is not the ConfigMap %q's config.hcl as mounted", c.Args[1], cms[0].Metadata.Name)
	}
	for _, s := range svcs {
		if s.Kind != "Service" || len(s.Spec.Ports) == 0 || s.Spec.Ports[0].TargetPort != mcpPort {
			t.Errorf("service %s: %+v", s.Metadata.Name, s.Spec.Ports)
		}
	}
}

// TestKubernetesSecretAndBudget: the Secret template holds every variable
// the ConfigMap's config reads with env(), and no real value; the
// PodDisruptionBudget keeps all but one replica through a drain and selects
// the Deployment's pods.
func TestKubernetesSecretAndBudget(t *testing.T) {
	t.Parallel()
	secrets := readManifests(t, "secret.yaml")
	if len(secrets) != 1 || secrets[0].Kind != "Secret" || secrets[0].Metadata.Name != "mcphost" {
		t.Fatalf("want one Secret named mcphost: %+v", secrets)
	}
	hcl := readManifests(t, "configmap.yaml")[0].Data["config.hcl"]
	for _, m := range regexp.MustCompile(`env\("([A-Z_]+)"`).FindAllStringSubmatch(hcl, -1) {
		v, ok := secrets[0].StringData[m[1]]
		if !ok {
			t.Errorf("the config reads %s, which the Secret template lacks", m[1])
		} else if !strings.Contains(v, "CHANGE-ME") {
			t.Errorf("the Secret template's %s is not a placeholder: %q", m[1], v)
		}
	}
	pdbs := readManifests(t, "pdb.yaml")
	if len(pdbs) != 1 || pdbs[0].Kind != "PodDisruptionBudget" || pdbs[0].Spec.MaxUnavailable != 1 ||
		pdbs[0].Spec.Selector.MatchLabels["app.kubernetes.io/name"] != "mcphost" {
		t.Fatalf("the PodDisruptionBudget: %+v", pdbs)
	}
}
