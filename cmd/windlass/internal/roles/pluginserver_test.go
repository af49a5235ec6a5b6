package roles

import (
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// oneCheckout serves every checkout from one directory.
type oneCheckout string

func (c oneCheckout) Checkout(context.Context, string, string) (string, error) { return string(c), nil }

// snoopPlugin prints, base64-encoded in a ConfigMap, everything a plugin
// could learn about the worker's credentials: its own environment, its
// parent's (the plugin server's) initial environment, $KUBECONFIG,
// ~/.kube/config and the in-cluster service account token.
var snoopPlugin = render.PluginConfig{Name: "snoop", Generate: render.PluginCommand{Command: []string{"sh", "-c"}, Args: []string{`
{
  echo "== env"; env
  echo "== parent env"; tr '\0' '\n' < /proc/$PPID/environ
  echo "== KUBECONFIG"; cat "${KUBECONFIG:-/nonexistent}"
  echo "== home kubeconfig"; cat "$HOME/.kube/config"
  echo "== token"; cat ` + inClusterToken + `
} > dump.txt 2>&1
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dump\ndata:\n  dump: "%s"\n' "$(base64 < dump.txt | tr -d '\n')"
`}}}

// workerSecrets gives this process, the "worker", a kubeconfig with a
// token in KUBECONFIG and in ~/.kube/config, and a secret in its
// environment. It returns the strings that must not reach a plugin.
func workerSecrets(t *testing.T) []string {
	t.Helper()
	home := t.TempDir()
	kubeconfig := "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n    token: MARKER-TOKEN-7f3a\n"
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".kube", "config"), []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(t.TempDir(), "worker.kubeconfig")
	if err := os.WriteFile(kc, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", kc)
	t.Setenv("WINDLASS_REDIS_PASSWORD", "MARKER-ENV-91c2")
	return []string{"MARKER-TOKEN-7f3a", "MARKER-ENV-91c2", kc, home}
}

// snoop renders the snoop plugin through the sandbox and the plugin
// server c, and returns what the plugin found.
func snoop(t *testing.T, c *render.PluginClient) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	objs, err := renderThrough(t, root, c, []render.PluginConfig{snoopPlugin}, "snoop")
	if err != nil {
		t.Fatal(err)
	}
	data, _, _ := unstructuredString(objs[0], "data", "dump")
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// renderThrough renders the app directory of root with plugin, as the
// worker does: in a render sandbox (this test binary), whose plugins run
// on the plugin server c.
func renderThrough(t *testing.T, root string, c *render.PluginClient, plugins []render.PluginConfig, plugin string) ([]map[string]any, error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sb, err := render.NewSandbox(exe, render.DefaultSandboxLimits, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sb.Close)
	r, err := render.NewRenderer(render.Config{Store: render.NewMemoryStore(), Git: oneCheckout(root), CacheDir: t.TempDir(),
		Plugins: plugins, PluginServer: c, Sandbox: sb, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	src := appspec.Source{RepoURL: "https://example.com/r.git", Path: "app", Plugin: &appspec.Plugin{Name: plugin}}
	ref, err := r.Render(t.Context(), render.SingleSource("app", "default", src, "0123456"), true)
	if err != nil {
		return nil, err
	}
	objs, err := r.Load(t.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]map[string]any, len(objs))
	for i := range objs {
		out[i] = objs[i].Object
	}
	return out, nil
}

func unstructuredString(obj map[string]any, keys ...string) (string, bool, error) {
	var cur any = obj
	for _, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur = m[k]
	}
	s, ok := cur.(string)
	return s, ok, nil
}

// TestPluginServerIsolation runs the real plugin server process, as the
// worker starts it, and a plugin that looks for the worker's token,
// environment and kubeconfig: it finds none of them. A plugin server
// given the worker's environment shows that the plugin would see a leak.
func TestPluginServerIsolation(t *testing.T) {
	secrets := workerSecrets(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)

	child, err := startPluginChild(t.Context(), exe, pluginChildEnviron(os.Environ()), log)
	if err != nil {
		t.Fatal(err)
	}
	defer child.Stop()
	dump := snoop(t, child.Client())
	t.Logf("what the plugin found:\n%s", dump)
	for _, section := range []string{"== env", "PATH=", "== parent env", "== KUBECONFIG", "== home kubeconfig", "== token"} {
		if !strings.Contains(dump, section) {
			t.Fatalf("the plugin's dump lacks %q: it did not run as written", section)
		}
	}
	for _, s := range secrets {
		if strings.Contains(dump, s) {
			t.Errorf("the plugin found %q", s)
		}
	}

	t.Run("control: an unscrubbed plugin server leaks", func(t *testing.T) {
		leaky, err := startPluginChild(t.Context(), exe, os.Environ(), log)
		if err != nil {
			t.Fatal(err)
		}
		defer leaky.Stop()
		dump := snoop(t, leaky.Client())
		if !strings.Contains(dump, "MARKER-ENV-91c2") || !strings.Contains(dump, secrets[2]) {
			t.Fatalf("the snoop plugin did not see the leaked environment:\n%s", dump)
		}
	})
}

// TestPluginServerChildRestarts kills the plugin server child: renders
// fail with a clear error naming the server while it is down, and work
// again once the worker has restarted it. A stopped child answers the
// same error.
func TestPluginServerChildRestarts(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child, err := startPluginChild(t.Context(), exe, pluginChildEnviron(os.Environ()), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	hello := render.PluginConfig{Name: "hello", Generate: render.PluginCommand{Command: []string{"sh", "-c", `printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hello\n'`}}}
	plugins := []render.PluginConfig{hello}
	if _, err := renderThrough(t, root, child.Client(), plugins, "hello"); err != nil {
		t.Fatal(err)
	}
	first := child.pid()
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	var sawDown bool
	for {
		_, err := renderThrough(t, root, child.Client(), plugins, "hello")
		if err == nil && child.pid() != first {
			break
		}
		if err != nil && strings.Contains(err.Error(), "plugin server unreachable at unix://") {
			sawDown = true
		}
		if time.Now().After(deadline) {
			t.Fatalf("no render after the child was killed: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("child %d killed, %d renders again (saw the down error: %v)", first, child.pid(), sawDown)

	child.Stop()
	_, err = renderThrough(t, root, child.Client(), plugins, "hello")
	if err == nil || !strings.Contains(err.Error(), "plugin server unreachable at unix://") || !strings.Contains(err.Error(), "is windlass plugin-server running?") {
		t.Fatalf("render with the server stopped: %v", err)
	}
	if errors.Is(err, render.ErrRenderLimit) {
		t.Fatalf("a server that is down is not the render's fault: %v", err)
	}
}

func TestLoadPluginServerConfig(t *testing.T) {
	tests := []struct {
		name string
		args []string
		err  string
	}{
		{name: "defaults", args: nil},
		{name: "loopback tcp", args: []string{"--listen", "127.0.0.1:7000"}},
		{name: "public address", args: []string{"--listen", "0.0.0.0:7000"}, err: "loopback or a unix socket only"},
		{name: "relative socket", args: []string{"--listen", "unix://plugins.sock"}, err: "want unix:///absolute/path"},
		{name: "stray argument", args: []string{"extra"}, err: "takes no arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadPluginServerConfig(tt.args)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
		})
	}
}

func TestPluginChildEnviron(t *testing.T) {
	got := pluginChildEnviron([]string{"PATH=/bin", "HOME=/root", "KUBECONFIG=/k", "WINDLASS_REDIS_PASSWORD=x", "HTTPS_PROXY=http://p", "AWS_SECRET_ACCESS_KEY=y"})
	want := "PATH=/bin HTTPS_PROXY=http://p"
	if strings.Join(got, " ") != want {
		t.Fatalf("pluginChildEnviron = %q, want %q", got, want)
	}
}

// TestWorkerPluginServer picks the worker's plugin server: none without
// plugins, the one --plugin-server names, else a child of this binary.
func TestWorkerPluginServer(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	plugins := []render.PluginConfig{{Name: "p", Generate: render.PluginCommand{Command: []string{"true"}}}}

	c, stop, err := workerSettings{}.pluginServer(t.Context(), nil, log)
	if err != nil || c != nil {
		t.Fatalf("no plugins: %v, %v", c, err)
	}
	stop()

	external := "unix://" + filepath.Join(t.TempDir(), "sidecar.sock")
	c, stop, err = workerSettings{PluginServer: external}.pluginServer(t.Context(), plugins, log)
	if err != nil || c.Address() != external {
		t.Fatalf("external: %v, %v", c, err)
	}
	stop()

	c, stop, err = workerSettings{}.pluginServer(t.Context(), plugins, log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.Address(), "unix://"+os.TempDir()) {
		t.Fatalf("child at %s", c.Address())
	}
	if err := c.Ping(t.Context()); err != nil {
		t.Fatalf("the child does not answer: %v", err)
	}
	stop()
	if err := c.Ping(t.Context()); !errors.Is(err, render.ErrPluginServerDown) {
		t.Fatalf("after stop: %v", err)
	}
	sock := strings.TrimPrefix(c.Address(), "unix://")
	if _, err := os.Stat(filepath.Dir(sock)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the child's directory stays: %v", err)
	}
}
