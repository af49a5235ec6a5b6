package render

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-cd/windlass/internal/appspec"
)

func sh(script string) PluginCommand {
	return PluginCommand{Command: []string{"sh", "-c"}, Args: []string{script}}
}

// configMapScript prints a ConfigMap named name whose data lines are
// printed by the shell snippet body (lines "  key: value").
func configMapScript(name, body string) PluginCommand {
	return sh(`printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ` + name + `\ndata:\n'; ` + body)
}

var testPlugins = []PluginConfig{
	{Name: "no-discovery", Generate: sh("cat manifests.yaml")},
	{Name: "cue", Discover: PluginDiscover{FileName: "*.cue"}, Generate: sh("cat manifests.yaml")},
	{Name: "glob", Discover: PluginDiscover{Find: PluginFind{Glob: "**/overlays/*.env"}}, Generate: sh("cat manifests.yaml")},
	{Name: "cmd", Discover: PluginDiscover{Find: PluginFind{Command: []string{"sh", "-c", "test -f PLUGIN && echo yes"}}}, Generate: sh("cat manifests.yaml")},
	{
		Name: "init",
		Init: sh(`printf '%s' "$ARGOCD_APP_NAME" > name.txt`),
		Generate: configMapScript("init", `printf '  name: "%s"\n' "$(cat name.txt)"; `+
			`if [ -w manifests.yaml ]; then echo '  writable: "yes"'; fi`),
	},
	{
		Name: "env",
		Generate: configMapScript("env", `for v in ARGOCD_APP_NAME ARGOCD_APP_NAMESPACE ARGOCD_APP_REVISION ARGOCD_APP_REVISION_SHORT `+
			`ARGOCD_APP_SOURCE_REPO_URL ARGOCD_APP_SOURCE_PATH ARGOCD_APP_SOURCE_TARGET_REVISION ARGOCD_ENV_FOO ARGOCD_ENV_GREETING `+
			`PARAM_IMAGE_TAG PARAM_FLAGS_0 PARAM_FLAGS_1 PARAM_LABELS_TEAM PARAM_LABELS_APP_KUBERNETES_IO_NAME ARGOCD_APP_PARAMETERS; do `+
			`eval "val=\${$v}"; printf "  %s: '%s'\n" "$v" "$val"; done; printf "  HOME_IS_PRIVATE: '%s'\n" "$(test -d "$HOME" && test "$HOME" != /root && echo yes)"`),
	},
}

func TestPluginRender(t *testing.T) {
	root, err := filepath.Abs("testdata/plugin")
	if err != nil {
		t.Fatal(err)
	}
	tag := "v1.2.3"
	tests := []struct {
		name   string
		path   string
		plugin *appspec.Plugin
		want   []string          // kind/name, sorted
		data   map[string]string // data of the ConfigMap, when checked
	}{
		{name: "by name", path: "plain-app", plugin: &appspec.Plugin{Name: "no-discovery"}, want: []string{"ConfigMap/from-plugin", "Secret/from-plugin"}},
		{name: "discovered by file name", path: "cue-app", plugin: &appspec.Plugin{}, want: []string{"ConfigMap/from-plugin", "Secret/from-plugin"}},
		{name: "discovered by find glob", path: "glob-app", plugin: &appspec.Plugin{}, want: []string{"ConfigMap/from-plugin", "Secret/from-plugin"}},
		{name: "discovered by find command", path: "cmd-app", want: []string{"ConfigMap/from-plugin", "Secret/from-plugin"}},
		{
			name: "init runs first in a writable copy", path: "plain-app", plugin: &appspec.Plugin{Name: "init"},
			want: []string{"ConfigMap/init"}, data: map[string]string{"name": "guestbook", "writable": "yes"},
		},
		{
			name: "environment as Argo CD sets it", path: "plain-app",
			plugin: &appspec.Plugin{
				Name: "env",
				Env:  []appspec.EnvVar{{Name: "FOO", Value: "bar"}, {Name: "GREETING", Value: "hello $ARGOCD_APP_NAME"}},
				Parameters: []appspec.PluginParameter{
					{Name: "image-tag", String: &tag},
					{Name: "flags", Array: []string{"--a", "--b"}},
					{Name: "labels", Map: map[string]string{"team": "shop", "app.kubernetes.io/name": "web"}},
				},
			},
			want: []string{"ConfigMap/env"},
			data: map[string]string{
				"ARGOCD_APP_NAME":                     "guestbook",
				"ARGOCD_APP_NAMESPACE":                "shop",
				"ARGOCD_APP_REVISION":                 "0123456789abcdef0123456789abcdef01234567",
				"ARGOCD_APP_REVISION_SHORT":           "0123456",
				"ARGOCD_APP_SOURCE_REPO_URL":          "https://example.com/shop.git",
				"ARGOCD_APP_SOURCE_PATH":              "plain-app",
				"ARGOCD_APP_SOURCE_TARGET_REVISION":   "main",
				"ARGOCD_ENV_FOO":                      "bar",
				"ARGOCD_ENV_GREETING":                 "hello guestbook",
				"PARAM_IMAGE_TAG":                     "v1.2.3",
				"PARAM_FLAGS_0":                       "--a",
				"PARAM_FLAGS_1":                       "--b",
				"PARAM_LABELS_TEAM":                   "shop",
				"PARAM_LABELS_APP_KUBERNETES_IO_NAME": "web",
				"ARGOCD_APP_PARAMETERS": `[{"name":"image-tag","string":"v1.2.3"},{"name":"flags","array":["--a","--b"]},` +
					`{"name":"labels","map":{"app.kubernetes.io/name":"web","team":"shop"}}]`,
				"HOME_IS_PRIVATE": "yes",
			},
		},
	}
	for _, mode := range pluginModes(t) {
		for _, tt := range tests {
			t.Run(mode.name+"/"+tt.name, func(t *testing.T) {
				before := treeDigest(t, root)
				src := appspec.Source{RepoURL: "https://example.com/shop.git", TargetRevision: "main", Path: tt.path, Plugin: tt.plugin}
				objs, err := renderWith(t, root, testPlugins, mode.server, SingleSource("guestbook", "shop", src, "0123456789abcdef0123456789abcdef01234567"))
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tt.want, sortedNames(objs)); d != "" {
					t.Fatalf("objects (-want +got):\n%s", d)
				}
				if tt.data != nil {
					data := stringMap(objs[0].Object, "data")
					if d := cmp.Diff(tt.data, data); d != "" {
						t.Fatalf("data (-want +got):\n%s", d)
					}
				}
				if treeDigest(t, root) != before {
					t.Fatal("the plugin modified the checkout")
				}
			})
		}
	}
}

// stringMap reads a map of strings from obj[key].
func stringMap(obj map[string]any, key string) map[string]string {
	raw, _ := obj[key].(map[string]any)
	out := map[string]string{}
	for k, v := range raw {
		out[k], _ = v.(string)
	}
	return out
}

func TestPluginDetection(t *testing.T) {
	root, err := filepath.Abs("testdata/plugin")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range pluginModes(t) {
		r := &Renderer{plugins: testPlugins, pluginServer: mode.server, log: discardLogger()}
		for path, want := range map[string]string{"cue-app": "plugin", "glob-app": "plugin", "cmd-app": "plugin", "plain-app": "directory"} {
			if got, err := r.detectTool(t.Context(), root, filepath.Join(root, path)); got != want || err != nil {
				t.Errorf("%s: detectTool(%s) = %q, %v; want %q", mode.name, path, got, err, want)
			}
		}
		for path, want := range map[string]string{"cue-app": "cue", "glob-app": "glob", "cmd-app": "cmd"} {
			if p, ok, err := r.discoverPlugin(t.Context(), root, filepath.Join(root, path)); !ok || p.Name != want || err != nil {
				t.Errorf("%s: discoverPlugin(%s) = %q, %v, %v; want %q", mode.name, path, p.Name, ok, err, want)
			}
		}
	}
}

// TestPluginEnvScrubbed checks that a plugin sees none of the worker's
// environment but PATH.
func TestPluginEnvScrubbed(t *testing.T) {
	t.Setenv("WINDLASS_TEST_SECRET", "hunter2")
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"app/x": ""})
	plugins := []PluginConfig{{Name: "printenv", Generate: configMapScript("env", `env | cut -d= -f1 | sort -u | sed "s/.*/  &: set/"`)}}
	src := appspec.Source{RepoURL: "https://example.com/r.git", Path: "app", Plugin: &appspec.Plugin{Name: "printenv", Env: []appspec.EnvVar{{Name: "X", Value: "1"}}}}
	for _, mode := range pluginModes(t) {
		objs, err := renderWith(t, root, plugins, mode.server, SingleSource("app", "default", src, "sha"))
		if err != nil {
			t.Fatal(err)
		}
		checkPluginEnv(t, mode.name, stringMap(objs[0].Object, "data"))
	}
}

func checkPluginEnv(t *testing.T, mode string, names map[string]string) {
	t.Helper()
	allowed := map[string]bool{"PATH": true, "HOME": true, "ARGOCD_ENV_X": true, "ARGOCD_APP_PARAMETERS": true,
		"PWD": true, "SHLVL": true, "_": true, "OLDPWD": true} // the last four are the shell's own
	for k := range newBuildEnv(toolInput{}) {
		allowed[k] = true
	}
	var extra []string
	for name := range names {
		if !allowed[name] {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 || names["PATH"] == "" {
		t.Fatalf("%s: plugin environment has %v (PATH present: %v)", mode, extra, names["PATH"] != "")
	}
}

func TestPluginFailures(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	writeFiles(t, root, map[string]string{"app/x": ""})
	pidFile := filepath.Join(t.TempDir(), "pid")
	plugins := []PluginConfig{
		{Name: "sleep", Generate: PluginCommand{Command: []string{"sleep", "30"}}, Timeout: metav1.Duration{Duration: time.Second}},
		{Name: "background", Generate: sh("sleep 31 & echo $! > " + pidFile + "; wait"), Timeout: metav1.Duration{Duration: time.Second}},
		{Name: "yes", Generate: PluginCommand{Command: []string{"yes"}}, MaxOutputBytes: 1 << 20},
		{Name: "bad-yaml", Generate: sh(`printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: [1, 2\n'`)},
		{Name: "fails", Generate: sh(`echo 'no chart found' >&2; exit 3`)},
		{Name: "init-fails", Init: sh("exit 1"), Generate: sh("true")},
	}
	tests := []struct {
		name, plugin, contains string
		err                    error
	}{
		{name: "timeout", plugin: "sleep", err: context.DeadlineExceeded, contains: "timed out after 1s"},
		{name: "output limit", plugin: "yes", err: ErrPluginOutput, contains: "more than 1048576 bytes"},
		{name: "malformed output names the line", plugin: "bad-yaml", err: nil, contains: "line 6"},
		{name: "stderr tail", plugin: "fails", err: nil, contains: "exit status 3: stderr: no chart found"},
		{name: "init failure", plugin: "init-fails", err: nil, contains: "plugin init-fails init: exit status 1"},
		{name: "not configured", plugin: "nope", err: ErrPluginNotConfigured, contains: `plugin "nope" is not configured`},
		{name: "no discovery match", plugin: "", err: ErrPluginNotConfigured, contains: "discovery"},
	}
	for _, mode := range pluginModes(t) {
		for _, tt := range tests {
			t.Run(mode.name+"/"+tt.name, func(t *testing.T) {
				start := time.Now()
				src := appspec.Source{RepoURL: "https://example.com/r.git", Path: "app", Plugin: &appspec.Plugin{Name: tt.plugin}}
				_, err := renderWith(t, root, plugins, mode.server, SingleSource("app", "default", src, "sha"))
				want := tt.err
				if mode.server != nil && want == context.DeadlineExceeded {
					want = nil // the server's message says so; the Go value stays there
				}
				wantError(t, err, want, tt.contains)
				if d := time.Since(start); d > 10*time.Second {
					t.Fatalf("took %s", d)
				}
			})
		}
	}
	t.Run("timeout kills the process group", func(t *testing.T) {
		src := appspec.Source{RepoURL: "https://example.com/r.git", Path: "app", Plugin: &appspec.Plugin{Name: "background"}}
		if _, err := renderVia(t, root, plugins, SingleSource("app", "default", src, "sha")); err == nil {
			t.Fatal("want a timeout")
		}
		b, err := os.ReadFile(pidFile)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for syscall.Kill(pid, 0) == nil && !isZombie(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("background process %d outlived the plugin", pid)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	for _, mode := range pluginModes(t) {
		t.Run(mode.name+"/symlink out of the repository", func(t *testing.T) {
			repo := t.TempDir()
			writeFiles(t, repo, map[string]string{"app/x": ""})
			if err := os.Symlink(outside, filepath.Join(repo, "app", "escape")); err != nil {
				t.Fatal(err)
			}
			src := appspec.Source{RepoURL: "https://example.com/r.git", Path: "app", Plugin: &appspec.Plugin{Name: "fails"}}
			_, err := renderWith(t, repo, plugins, mode.server, SingleSource("app", "default", src, "sha"))
			wantError(t, err, ErrBadPath, "symlink app/escape leads out of the repository", outside)
		})
	}
}

// isZombie reports whether pid has exited but is not reaped yet.
func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

func TestPluginValidate(t *testing.T) {
	err := ValidatePlugins([]PluginConfig{
		{Name: "ok", Generate: sh("true"), Discover: PluginDiscover{Find: PluginFind{Glob: "**/*.cue"}}},
		{Name: "ok", Generate: sh("true")},
		{Generate: sh("true")},
		{Name: "nogen"},
		{Name: "badglob", Generate: sh("true"), Discover: PluginDiscover{Find: PluginFind{Glob: "[abc"}}},
	})
	for _, want := range []string{`"ok": configured twice`, "plugin 2: name is required", `"nogen": generate.command`, `"badglob": discover.find.glob`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidatePlugins() = %v, want it to mention %q", err, want)
		}
	}
}

func TestPluginGlobRegexp(t *testing.T) {
	tests := []struct {
		glob, path string
		want       bool
	}{
		{"**/Chart.yaml", "Chart.yaml", true},
		{"**/Chart.yaml", "a/b/Chart.yaml", true},
		{"*.cue", "a/x.cue", false},
		{"./*.cue", "x.cue", true},
		{"a/**", "a/b/c", true},
		{"env-?.yaml", "env-1.yaml", true},
		{"[!x]*.yaml", "y.yaml", true},
		{"[!x]*.yaml", "x.yaml", false},
	}
	for _, tt := range tests {
		re, err := globRegexp(tt.glob)
		if err != nil {
			t.Fatal(err)
		}
		if got := re.MatchString(tt.path); got != tt.want {
			t.Errorf("glob %q on %q = %v, want %v", tt.glob, tt.path, got, tt.want)
		}
	}
}
