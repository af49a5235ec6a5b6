package deploy

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// composeTool returns the command that runs docker compose: the compose
// plugin of docker, else a docker-compose binary (hack/deps.sh installs
// Debian's), else nothing.
func composeTool() []string {
	if exec.Command("docker", "compose", "version").Run() == nil {
		return []string{"docker", "compose"}
	}
	if p, err := exec.LookPath("docker-compose"); err == nil {
		return []string{p}
	}
	return nil
}

// TestComposeConfig validates docker-compose.yaml with the compose tool
// (`config -q`, no Docker engine needed), with the variables of
// .env.example, and shows that a missing required variable is refused.
func TestComposeConfig(t *testing.T) {
	tool := composeTool()
	if tool == nil {
		t.Skip("neither `docker compose` nor docker-compose is installed (make deps installs docker-compose); TestComposeStructure still checks the file")
	}
	run := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(tool[0], append(tool[1:], args...)...)
		cmd.Dir = root
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	if out, err := run(base, "--env-file", ".env.example", "-f", "docker-compose.yaml", "config", "-q"); err != nil {
		t.Fatalf("%v config -q: %v\n%s", tool, err, out)
	}
	empty := filepath.Join(t.TempDir(), "empty.env")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := run(base, "--env-file", empty, "-f", "docker-compose.yaml", "config", "-q")
	if err == nil || !strings.Contains(out, "in .env") {
		t.Fatalf("without the secrets: err %v, output %s; want a refusal naming .env", err, out)
	}
}

// composeFile is the part of the compose file the structure test reads.
type composeFile struct {
	Services map[string]struct {
		Image         string         `json:"image"`
		ContainerName string         `json:"container_name"`
		Ports         []any          `json:"ports"`
		Healthcheck   map[string]any `json:"healthcheck"`
		DependsOn     map[string]struct {
			Condition string `json:"condition"`
		} `json:"depends_on"`
		Volumes     []string          `json:"volumes"`
		Environment map[string]string `json:"environment"`
		ReadOnly    bool              `json:"read_only"`
	} `json:"services"`
}

var (
	composeVar  = regexp.MustCompile(`\$\{([A-Z0-9_]+)(:?[-?])?([^}]*)\}`)
	pinnedImage = regexp.MustCompile(`^[a-z0-9./-]+(:[A-Za-z0-9._-]+)$`)
)

// envExample reads .env.example.
func envExample(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, ".env.example"))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf(".env.example: bad line %q", line)
		}
		vars[k] = v
	}
	return vars
}

// expand resolves ${VAR}, ${VAR:-default} and ${VAR:?msg} with vars.
func expand(s string, vars map[string]string) string {
	return composeVar.ReplaceAllStringFunc(s, func(m string) string {
		p := composeVar.FindStringSubmatch(m)
		if v, ok := vars[p[1]]; ok && v != "" {
			return v
		}
		if p[2] == ":-" || p[2] == "-" {
			return p[3]
		}
		return ""
	})
}

// TestComposeStructure checks docker-compose.yaml without any tool: the
// services, pinned images (never latest, in the file's defaults and in
// .env.example), health checks and depends_on conditions, a scalable
// worker, the mounted kubeconfig, and that every variable the file needs
// is in .env.example.
func TestComposeStructure(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "docker-compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatalf("docker-compose.yaml: %v", err)
	}
	vars := envExample(t)
	want := []string{"dex", "postgresql", "redis", "server", "temporal", "temporal-ui", "worker"}
	if d := cmp.Diff(want, keys(f.Services)); d != "" {
		t.Fatalf("services (-want +got):\n%s", d)
	}
	for _, m := range composeVar.FindAllStringSubmatch(string(raw), -1) {
		if _, ok := vars[m[1]]; !ok && m[2] != ":-" && m[2] != "-" {
			t.Errorf("variable %s has no default and is not in .env.example", m[1])
		}
	}
	for name, s := range f.Services {
		for _, img := range []string{expand(s.Image, nil), expand(s.Image, vars)} {
			if !pinnedImage.MatchString(img) || strings.HasSuffix(img, ":latest") {
				t.Errorf("%s: image %q (from %q) is not pinned to a version", name, img, s.Image)
			}
		}
		if s.ContainerName != "" {
			t.Errorf("%s: container_name %q stops two projects (and scaling)", name, s.ContainerName)
		}
		if name != "temporal-ui" && s.Healthcheck == nil {
			t.Errorf("%s: no healthcheck", name)
		}
	}
	deps := map[string][]string{
		"temporal": {"postgresql"}, "temporal-ui": {"temporal"},
		"server": {"dex", "redis", "temporal"}, "worker": {"redis", "temporal"},
	}
	for svc, on := range deps {
		var got []string
		for dep, d := range f.Services[svc].DependsOn {
			if d.Condition != "service_healthy" {
				t.Errorf("%s depends on %s with condition %q, want service_healthy", svc, dep, d.Condition)
			}
			got = append(got, dep)
		}
		slices.Sort(got)
		if d := cmp.Diff(on, got); d != "" {
			t.Errorf("%s depends_on (-want +got):\n%s", svc, d)
		}
	}
	if w := f.Services["worker"]; len(w.Ports) > 0 {
		t.Errorf("worker publishes ports %v: --scale worker=3 would clash", w.Ports)
	}
	for _, svc := range []string{"server", "worker"} {
		s := f.Services[svc]
		if !s.ReadOnly {
			t.Errorf("%s: root filesystem not read-only", svc)
		}
		if !slices.ContainsFunc(s.Volumes, func(v string) bool { return strings.HasSuffix(v, ":/etc/windlass/kubeconfig:ro") }) ||
			s.Environment["KUBECONFIG"] != "/etc/windlass/kubeconfig" {
			t.Errorf("%s: kubeconfig not mounted: volumes %v, KUBECONFIG %q", svc, s.Volumes, s.Environment["KUBECONFIG"])
		}
		if s.Environment["WINDLASS_TEMPORAL_ADDRESS"] != "temporal:7233" || s.Environment["WINDLASS_REDIS_ADDRESS"] != "redis:6379" {
			t.Errorf("%s: environment %v", svc, s.Environment)
		}
	}

	// Dex's configuration knows the server's clients.
	var dex struct {
		Issuer        string `json:"issuer"`
		StaticClients []struct {
			ID           string   `json:"id"`
			Public       bool     `json:"public"`
			SecretEnv    string   `json:"secretEnv"`
			RedirectURIs []string `json:"redirectURIs"`
		} `json:"staticClients"`
	}
	b, err := os.ReadFile(filepath.Join(root, "deploy/compose/dex.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &dex); err != nil {
		t.Fatalf("dex.yaml: %v", err)
	}
	server := f.Services["server"].Environment
	if dex.Issuer != server["WINDLASS_OIDC_ISSUER"] {
		t.Errorf("dex issuer %q, server's %q", dex.Issuer, server["WINDLASS_OIDC_ISSUER"])
	}
	ids := map[string]bool{}
	for _, c := range dex.StaticClients {
		ids[c.ID] = true
		if c.ID == server["WINDLASS_OIDC_CLIENT_ID"] {
			if c.SecretEnv != "WINDLASS_OIDC_CLIENT_SECRET" || !slices.Contains(c.RedirectURIs, expand(server["WINDLASS_EXTERNAL_URL"], vars)+"/api/v1/sso/callback") {
				t.Errorf("dex client %s: secretEnv %q, redirects %v", c.ID, c.SecretEnv, c.RedirectURIs)
			}
		}
	}
	if !ids["windlass"] || !ids["windlass-cli"] {
		t.Errorf("dex static clients %v, want windlass and windlass-cli", ids)
	}
}
