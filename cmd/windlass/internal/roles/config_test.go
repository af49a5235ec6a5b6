package roles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/customizations"
	"github.com/windlass-cd/windlass/internal/health"
	"github.com/windlass-cd/windlass/internal/resourcefilter"
	"github.com/windlass-cd/windlass/worker"
)

func TestLoadConfig(t *testing.T) {
	badCM := filepath.Join(t.TempDir(), "argocd-cm.yaml")
	if err := os.WriteFile(badCM, []byte("resource.exclusions: |\n  - kinds: ['[Secret']\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	goodCM := filepath.Join(t.TempDir(), "argocd-cm.yaml")
	if err := os.WriteFile(goodCM, []byte("resource.exclusions: |\n  - kinds: [Secret]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		load    func([]string) error
		args    []string
		wantErr string
	}{
		{"dev defaults", func(a []string) error { _, err := loadDevConfig(a); return err }, nil, ""},
		{"dev bad temporal address", func(a []string) error { _, err := loadDevConfig(a); return err }, []string{"--temporal-address", "nohost"}, "temporal-address"},
		{"dev bad log level", func(a []string) error { _, err := loadDevConfig(a); return err }, []string{"--log-level", "loud"}, "log-level"},
		{"dev bad api address", func(a []string) error { _, err := loadDevConfig(a); return err }, []string{"--api-address", "8080"}, "api-address"},
		{"dev stray argument", func(a []string) error { _, err := loadDevConfig(a); return err }, []string{"extra"}, "unexpected arguments"},
		{"worker needs redis", func(a []string) error { _, err := loadWorkerConfig(a); return err }, nil, "redis-address is required"},
		{"worker ok", func(a []string) error { _, err := loadWorkerConfig(a); return err }, []string{"--redis-address", "127.0.0.1:6379"}, ""},
		{"worker bad refresh", func(a []string) error { _, err := loadWorkerConfig(a); return err }, []string{"--redis-address", "r:1", "--refresh-seconds", "0"}, "refresh-seconds"},
		{"worker zero render-max-file-bytes", func(a []string) error { _, err := loadWorkerConfig(a); return err }, []string{"--redis-address", "r:1", "--render-max-file-bytes", "0"}, "render-max-file-bytes"},
		{"worker negative health-script-memory-bytes", func(a []string) error { _, err := loadWorkerConfig(a); return err }, []string{"--redis-address", "r:1", "--health-script-memory-bytes", "-1"}, "health-script-memory-bytes"},
		{"worker zero health-script-max-instructions", func(a []string) error { _, err := loadWorkerConfig(a); return err }, []string{"--redis-address", "r:1", "--health-script-max-instructions", "0"}, "health-script-max-instructions"},
		{"worker external plugin server", func(a []string) error { _, err := loadWorkerConfig(a); return err }, []string{"--redis-address", "r:1", "--plugin-server", "unix:///run/windlass/plugins.sock"}, ""},
		{"worker bad plugin server", func(a []string) error { _, err := loadWorkerConfig(a); return err }, []string{"--redis-address", "r:1", "--plugin-server", "plugins.sock"}, `plugin server address "plugins.sock"`},
		{"worker remote plugin server", func(a []string) error { _, err := loadWorkerConfig(a); return err }, []string{"--redis-address", "r:1", "--plugin-server", "http://10.0.0.1:7000"}, "only loopback"},
		{"dev public plugin server", func(a []string) error { _, err := loadDevConfig(a); return err }, []string{"--plugin-server", "tcp://10.0.0.1:80"}, "want unix:///path"},
		{"worker kustomize build options", func(a []string) error { _, err := loadWorkerConfig(a); return err }, []string{"--redis-address", "r:1", "--kustomize-build-options", "--enable-helm --load-restrictor LoadRestrictionsNone"}, ""},
		{"dev kustomize alpha plugins refused", func(a []string) error { _, err := loadDevConfig(a); return err }, []string{"--kustomize-build-options", "--enable-alpha-plugins"}, "--enable-alpha-plugins is not supported"},
		{"dev zero health-script-timeout", func(a []string) error { _, err := loadDevConfig(a); return err }, []string{"--health-script-timeout", "0s"}, "health-script-timeout"},
		{"server needs redis", func(a []string) error { _, err := loadServerConfig(a); return err }, []string{"--api-address", "127.0.0.1:0"}, "redis-address is required"},
		{"server ok", func(a []string) error { _, err := loadServerConfig(a); return err }, []string{"--api-address", "127.0.0.1:0", "--redis-address", "127.0.0.1:6379"}, ""},
		{"server argocd-cm", func(a []string) error { _, err := loadServerConfig(a); return err }, []string{"--redis-address", "127.0.0.1:6379", "--argocd-cm", goodCM}, ""},
		{"server argocd-cm with a bad glob", func(a []string) error { _, err := loadServerConfig(a); return err }, []string{"--redis-address", "127.0.0.1:6379", "--argocd-cm", badCM},
			`resource.exclusions[0].kinds: pattern "[Secret"`},
		{"server argocd-cm missing", func(a []string) error { _, err := loadServerConfig(a); return err }, []string{"--redis-address", "127.0.0.1:6379", "--argocd-cm", badCM + ".nope"}, "no such file"},
		{"temporal defaults", func(a []string) error { _, err := loadTemporalConfig(a); return err }, nil, ""},
		{"temporal port zero, no UI", func(a []string) error { _, err := loadTemporalConfig(a); return err }, []string{"--address", "127.0.0.1:0", "--ui-address", "off"}, ""},
		{"temporal bad address", func(a []string) error { _, err := loadTemporalConfig(a); return err }, []string{"--address", "7233"}, "address"},
		{"temporal bad ui address", func(a []string) error { _, err := loadTemporalConfig(a); return err }, []string{"--ui-address", "8233"}, "ui-address"},
		{"temporal bad debug address", func(a []string) error { _, err := loadTemporalConfig(a); return err }, []string{"--debug-address", "6060"}, "debug-address"},
		{"temporal empty data dir", func(a []string) error { _, err := loadTemporalConfig(a); return err }, []string{"--data-dir", ""}, "data-dir is required"},
		{"temporal worker flag", func(a []string) error { _, err := loadTemporalConfig(a); return err }, []string{"--redis-address", "r:1"}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("TEMPORAL_ADDRESS", "")
			t.Setenv("WINDLASS_TEMPORAL_ADDRESS", "127.0.0.1:7233")
			err := tt.load(tt.args)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// Relative directories (windlass dev's default is .windlass) become
// absolute, as the renderers need.
func TestConfigDirsAreAbsolute(t *testing.T) {
	t.Setenv("WINDLASS_TEMPORAL_ADDRESS", "127.0.0.1:7233")
	wd := t.TempDir()
	t.Chdir(wd)
	dev, err := loadDevConfig([]string{"--data-dir", "state"})
	if err != nil {
		t.Fatal(err)
	}
	wk, err := loadWorkerConfig([]string{"--redis-address", "127.0.0.1:6379", "--cache-dir", "cache"})
	if err != nil {
		t.Fatal(err)
	}
	tc, err := loadTemporalConfig([]string{"--data-dir", "t"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, got, want string }{
		{"dev data dir", dev.DataDir, filepath.Join(wd, "state")},
		{"dev cache dir", dev.CacheDir, filepath.Join(wd, "state", "git")},
		{"worker cache dir", wk.CacheDir, filepath.Join(wd, "cache")},
		{"temporal data dir", tc.DataDir, filepath.Join(wd, "t")},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

// The limits of renders and Lua health scripts: defaults, flags and their
// environment variables reach the worker's settings, and take effect in
// the health checker the worker builds from them.
func TestWorkerLimitFlags(t *testing.T) {
	t.Setenv("WINDLASS_TEMPORAL_ADDRESS", "127.0.0.1:7233")
	scripts := t.TempDir()
	if err := os.MkdirAll(filepath.Join(scripts, "ConfigMap"), 0o755); err != nil {
		t.Fatal(err)
	}
	// 2 MB of string and a loop of a few thousand instructions: within the
	// defaults, over the budgets set below.
	script := `local s = ("x"):rep(2000000) for i = 1, 2000 do end return {status = "Healthy", message = tostring(#s)}`
	if err := os.WriteFile(filepath.Join(scripts, "ConfigMap", "health.lua"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}}}
	base := []string{"--redis-address", "127.0.0.1:6379", "--resource-customizations", scripts}
	for _, tt := range []struct {
		name     string
		args     []string
		env      map[string]string
		want     health.Options
		maxFile  int64
		assessed string // a part of the script's outcome
	}{
		{name: "defaults", want: health.Options{MemoryLimit: health.DefaultMemoryLimit, MaxInstructions: health.DefaultMaxInstructions, Timeout: health.DefaultTimeout},
			maxFile: render.DefaultMaxFileBytes, assessed: "2000000"},
		{name: "flags", args: []string{"--health-script-memory-bytes", "1048576", "--health-script-timeout", "2s", "--render-max-file-bytes", "4096"},
			want:    health.Options{MemoryLimit: 1 << 20, MaxInstructions: health.DefaultMaxInstructions, Timeout: 2 * time.Second},
			maxFile: 4096, assessed: "exceeded its memory budget of 1 MiB"},
		{name: "environment", env: map[string]string{"WINDLASS_HEALTH_SCRIPT_MAX_INSTRUCTIONS": "1000", "WINDLASS_RENDER_MAX_FILE_BYTES": "8192"},
			want:    health.Options{MemoryLimit: health.DefaultMemoryLimit, MaxInstructions: 1000, Timeout: health.DefaultTimeout},
			maxFile: 8192, assessed: "instruction budget of 1000 instructions"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			c, err := loadWorkerConfig(append(base, tt.args...))
			if err != nil {
				t.Fatal(err)
			}
			custom, _, err := c.customizations()
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, custom.Health); d != "" || c.RenderMaxFileBytes != tt.maxFile || custom.Dir != scripts {
				t.Fatalf("health options (-want +got):\n%s\nrender-max-file-bytes %d, want %d; dir %q", d, c.RenderMaxFileBytes, tt.maxFile, custom.Dir)
			}
			// As the worker does.
			checker := customizations.NewLibrary(custom.Health, nil, customizations.WithSource(customizations.Dir(custom.Dir), custom.Dir))
			if err := checker.Load(t.Context()); err != nil {
				t.Fatal(err)
			}
			if r := checker.Assess(cm); !strings.Contains(r.Message, tt.assessed) {
				t.Fatalf("assessed %+v, want a message with %q", r, tt.assessed)
			}
		})
	}
}

// The resource customizations' flags and environment, and the argocd-cm
// file, reach the worker's configuration.
func TestCustomizationsFlags(t *testing.T) {
	t.Setenv("WINDLASS_TEMPORAL_ADDRESS", "127.0.0.1:7233")
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cm := write("argocd-cm.yaml", `apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cm}
data:
  resource.customizations.health.example.com_Widget: 'return {status = "Healthy"}'
  resource.customizations.ignoreDifferences.all: |
    managedFieldsManagers: [kube-controller-manager]
  resource.compareoptions: 'ignoreResourceStatusField: all'
`)
	excl := write("exclusions.yaml", "resource.exclusions: |\n  - kinds: [Event]\n")
	exclFilter, err := resourcefilter.New([]resourcefilter.Rule{{Kinds: []string{"Event"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	badExcl := write("bad-exclusions.yaml", "resource.exclusions: |\n  - kind: [Event]\n")
	notYAML := write("not-yaml.yaml", "resource.inclusions: |\n  - kinds: [Event\n")
	base := []string{"--redis-address", "127.0.0.1:6379"}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    worker.CustomizationsConfig
		ignored []string
		wantErr string
	}{
		{name: "defaults", want: worker.CustomizationsConfig{Revision: "HEAD", Every: 3 * time.Minute}},
		{name: "a repository", args: []string{"--resource-customizations-repo", "https://git.example.com/lib.git", "--resource-customizations-path", "resource_customizations",
			"--resource-customizations-revision", "v1", "--resource-customizations-interval", "1m"},
			want: worker.CustomizationsConfig{RepoURL: "https://git.example.com/lib.git", Path: "resource_customizations", Revision: "v1", Every: time.Minute}},
		{name: "environment", env: map[string]string{"WINDLASS_RESOURCE_CUSTOMIZATIONS_REPO": "https://git.example.com/lib.git", "WINDLASS_RESOURCE_CUSTOMIZATIONS_INTERVAL": "30s", "WINDLASS_ARGOCD_CM": cm},
			want: worker.CustomizationsConfig{RepoURL: "https://git.example.com/lib.git", Revision: "HEAD", Every: 30 * time.Second,
				Health:            health.Options{Inline: map[string]string{"example.com/Widget": `return {status = "Healthy"}`}},
				IgnoreDifferences: []appspec.ResourceIgnoreDifferences{{Group: "*", Kind: "*", ManagedFieldsManagers: []string{"kube-controller-manager"}}}},
			ignored: []string{"resource.compareoptions"}},
		{name: "directory and repository", args: []string{"--resource-customizations", dir, "--resource-customizations-repo", "https://git.example.com/lib.git"}, wantErr: "exclude each other"},
		{name: "a zero interval", args: []string{"--resource-customizations-interval", "0s"}, wantErr: "resource-customizations-interval must be positive"},
		{name: "exclusions", args: []string{"--argocd-cm", excl}, want: worker.CustomizationsConfig{Revision: "HEAD", Every: 3 * time.Minute, Resources: exclFilter}},
		{name: "exclusions with an unknown field", args: []string{"--argocd-cm", badExcl}, wantErr: `resource.exclusions: error unmarshaling JSON: while decoding JSON: json: unknown field "kind"`},
		{name: "exclusions that are not YAML", args: []string{"--argocd-cm", notYAML}, wantErr: "argocd-cm " + notYAML + ": resource.inclusions: error converting YAML to JSON"},
		{name: "a missing argocd-cm", args: []string{"--argocd-cm", filepath.Join(dir, "nope")}, wantErr: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			c, err := loadWorkerConfig(append(base, tt.args...))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, ignored, err := c.customizations()
			if err != nil {
				t.Fatal(err)
			}
			got.Health = health.Options{Inline: got.Health.Inline} // the limits are TestWorkerLimitFlags'
			if d := cmp.Diff(tt.want, got, cmpopts.EquateEmpty(), cmp.Comparer(sameFilter)); d != "" {
				t.Errorf("customizations (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.ignored, ignored); d != "" {
				t.Errorf("ignored keys (-want +got):\n%s", d)
			}
		})
	}
}

// sameFilter compares filters by their rules.
func sameFilter(a, b *resourcefilter.Filter) bool {
	ae, ai := a.Rules()
	be, bi := b.Rules()
	return cmp.Equal(ae, be, cmpopts.EquateEmpty()) && cmp.Equal(ai, bi, cmpopts.EquateEmpty())
}

// A notifications file that does not parse stops the worker at start,
// naming the key; a missing one does not (it is read when it appears).
func TestNotificationsConfigCheckedAtStart(t *testing.T) {
	t.Setenv("WINDLASS_TEMPORAL_ADDRESS", "127.0.0.1:7233")
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hook := "service.webhook.hook: 'url: https://hooks.example.com'\n"
	for _, tt := range []struct{ name, path, want string }{
		{"missing", filepath.Join(dir, "none.yaml"), ""},
		{"good", write("good.yaml", hook+"template.t: 'message: hi'\n"), ""},
		{"template does not parse", write("tmpl.yaml", "template.t: |\n  message: '{{.app'\n"), "template.t: message does not parse"},
		{"condition does not compile", write("cond.yaml", "template.t: 'message: x'\ntrigger.on-x: |\n  - when: app.(\n    send: [t]\n"), "trigger.on-x: [0].when does not compile"},
		{"unknown service", write("svc.yaml", "subscriptions: |\n  - recipients: [pager:ops]\n"), `unknown service "pager"`},
		{"unknown trigger", write("trig.yaml", hook+"subscriptions: |\n  - recipients: [hook]\n    triggers: [on-nothing]\n"), `unknown trigger "on-nothing"`},
		{"recipients over the limit", write("many.yaml", hook+"subscriptions: |\n  - recipients: ["+strings.Repeat("hook:a, ", 20)+"hook:b]\n"),
			"21 recipients, over the limit of 20"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadWorkerConfig([]string{"--redis-address", "127.0.0.1:6379", "--notifications-config", tt.path})
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "notifications-config: ") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one about %q", err, tt.want)
			}
		})
	}
}

// A worker fetches the checked-out commit alone unless told not to, by
// flag or environment.
func TestWorkerShallowFetchFlag(t *testing.T) {
	t.Setenv("WINDLASS_TEMPORAL_ADDRESS", "127.0.0.1:7233")
	base := []string{"--redis-address", "127.0.0.1:6379"}
	for _, tt := range []struct {
		name string
		args []string
		env  string
		want bool
	}{
		{name: "default", want: true},
		{name: "flag off", args: []string{"--git-shallow-fetch=false"}, want: false},
		{name: "environment off", env: "false", want: false},
		{name: "flag wins over environment", args: []string{"--git-shallow-fetch"}, env: "false", want: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv("WINDLASS_GIT_SHALLOW_FETCH", tt.env)
			}
			c, err := loadWorkerConfig(append(base, tt.args...))
			if err != nil {
				t.Fatal(err)
			}
			if c.GitShallowFetch != tt.want {
				t.Fatalf("GitShallowFetch = %v, want %v", c.GitShallowFetch, tt.want)
			}
		})
	}
}
