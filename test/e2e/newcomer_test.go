package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/windlass-cd/windlass/internal/syncbuf"
)

// newcomerFiles is one repository with an app of each tool: a plain
// directory, a Helm chart, a Kustomize overlay over a base and a Jsonnet
// file.
func newcomerFiles() map[string]string {
	files := guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1")
	for p, c := range map[string]string{
		"helm/Chart.yaml":                      "apiVersion: v2\nname: hello\nversion: 0.1.0\n",
		"helm/values.yaml":                     "greeting: hello\n",
		"helm/templates/cm.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-helm\ndata:\n  greeting: {{ .Values.greeting }}\n",
		"kustomize/base/kustomization.yaml":    "resources: [cm.yaml]\n",
		"kustomize/base/cm.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kust\ndata:\n  k: v\n",
		"kustomize/overlay/kustomization.yaml": "resources: [../base]\nnamePrefix: dev-\n",
		"jsonnet/main.jsonnet":                 "{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'jsonnet' }, data: { n: std.toString(1 + 1) } }\n",
		"bomb/main.jsonnet":                    "local f(x) = f(x + 1) tailstrict; f(0)\n",
	} {
		files[p] = c
	}
	return files
}

// TestNewcomerPath runs windlass dev as make run does: from a checkout's
// directory, with the relative default data dir and default settings (its
// own ports and management namespace aside, to share the test bed), logs in
// with the password file it writes, then creates an app of each tool with
// the CLI, syncs it and sees it Synced and Healthy.
func TestNewcomerPath(t *testing.T) {
	cli, bin := windlassCLIBin(t)
	repoURL, work := newRepo(t, uniq("newcomer"))
	push(t, work, newcomerFiles())

	dir := t.TempDir()
	ports := freeLoopbackPorts(t, 2)
	api := fmt.Sprintf("127.0.0.1:%d", ports[0])
	dev := exec.Command(bin, "dev")
	dev.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WINDLASS_") && !strings.HasPrefix(kv, "TEMPORAL_") {
			dev.Env = append(dev.Env, kv)
		}
	}
	dev.Env = append(dev.Env, "KUBECONFIG="+bed.env.Cluster.Kubeconfig,
		"WINDLASS_API_ADDRESS="+api, fmt.Sprintf("WINDLASS_TEMPORAL_ADDRESS=127.0.0.1:%d", ports[1]),
		"WINDLASS_TEMPORAL_UI_ADDRESS=off", "WINDLASS_MANAGEMENT_NAMESPACE="+uniq("newcomer"))
	var logs syncbuf.Buffer
	dev.Stdout, dev.Stderr = &logs, &logs
	if err := dev.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dev.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = dev.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = dev.Process.Kill()
		}
		if t.Failed() {
			t.Logf("windlass dev:\n%s", logs.String())
		}
	})
	pwFile := filepath.Join(dir, ".windlass", "initial-admin-password")
	eventually(t, 3*time.Minute, "windlass dev is ready", func() (bool, string) {
		resp, err := http.Get("http://" + api + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		_ = resp.Body.Close()
		_, perr := os.Stat(pwFile)
		return resp.StatusCode == http.StatusOK && perr == nil, resp.Status
	})
	pw, err := os.ReadFile(pwFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := cli(string(pw), "login", "--server", "http://"+api, "--username", "admin", "--password-stdin"); code != 0 {
		t.Fatalf("login: exit %d: %s", code, stderr)
	}
	ns := uniq("newcomer")
	for _, app := range []struct{ name, source string }{
		{"dir", "path: guestbook"},
		{"helm", "path: helm"},
		{"kustomize", "path: kustomize/overlay"},
		{"jsonnet", "path: jsonnet\n    directory: {jsonnet: {}}"},
	} {
		t.Run(app.name, func(t *testing.T) {
			name := uniq("nc-" + app.name)
			manifest := filepath.Join(t.TempDir(), "app.yaml")
			yaml := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s}
spec:
  project: default
  source:
    repoURL: %s
    targetRevision: main
    %s
  destination: {server: https://kubernetes.default.svc, namespace: %s}
  syncPolicy: {syncOptions: [CreateNamespace=true]}
`, name, repoURL, app.source, ns)
			if err := os.WriteFile(manifest, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, stderr, code := cli("", "app", "create", "-f", manifest); code != 0 {
				t.Fatalf("create: exit %d: %s%s", code, out, stderr)
			}
			if out, stderr, code := cli("", "app", "sync", name); code != 0 {
				t.Fatalf("sync: exit %d: %s%s", code, out, stderr)
			}
			eventually(t, 2*time.Minute, name+" Synced and Healthy", func() (bool, string) {
				out, stderr, code := cli("", "app", "get", name, "-o", "json")
				if code != 0 {
					return false, stderr
				}
				var got struct {
					Status struct {
						Sync, Health, Message string
						Resources             []json.RawMessage
					}
				}
				if err := json.Unmarshal([]byte(out), &got); err != nil {
					return false, err.Error()
				}
				st := got.Status
				return st.Sync == "Synced" && st.Health == "Healthy" && len(st.Resources) > 0,
					fmt.Sprintf("%s/%s, %d resources: %s", st.Sync, st.Health, len(st.Resources), st.Message)
			})
		})
	}
	if _, err := os.Stat(filepath.Join(dir, ".windlass", "git")); err != nil {
		t.Errorf("the Git cache is not under the relative data dir: %v", err)
	}

	// A Jsonnet recursion without end overflows the stack of its render
	// sandbox, not windlass dev: the app shows the limit it broke, and
	// once the repository is fixed it syncs.
	t.Run("hostile jsonnet", func(t *testing.T) {
		name := uniq("nc-bomb")
		manifest := filepath.Join(t.TempDir(), "app.yaml")
		yaml := fmt.Sprintf("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: %s}\nspec:\n  project: default\n"+
			"  source: {repoURL: %s, targetRevision: main, path: bomb}\n"+
			"  destination: {server: https://kubernetes.default.svc, namespace: %s}\n  syncPolicy: {syncOptions: [CreateNamespace=true]}\n",
			name, repoURL, ns)
		if err := os.WriteFile(manifest, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, stderr, code := cli("", "app", "create", "-f", manifest); code != 0 {
			t.Fatalf("create: exit %d: %s%s", code, out, stderr)
		}
		appStatus := func() (sync, health, message string) {
			out, _, _ := cli("", "app", "get", name, "-o", "json")
			var got struct {
				Status struct{ Sync, Health, Message string }
			}
			_ = json.Unmarshal([]byte(out), &got)
			return got.Status.Sync, got.Status.Health, got.Status.Message
		}
		eventually(t, 2*time.Minute, name+" names the stack limit", func() (bool, string) {
			sync, _, msg := appStatus()
			return sync == "Unknown" && strings.Contains(msg, "stack limit"), sync + ": " + msg
		})
		if resp, err := http.Get("http://" + api + "/readyz"); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("windlass dev after the bomb: %v %v", resp, err)
		}
		push(t, work, map[string]string{"bomb/main.jsonnet": "{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'defused' } }\n"})
		if out, stderr, code := cli("", "app", "refresh", name, "--hard"); code != 0 {
			t.Fatalf("refresh: exit %d: %s%s", code, out, stderr)
		}
		eventually(t, 2*time.Minute, name+" renders again", func() (bool, string) {
			sync, _, msg := appStatus()
			return sync == "OutOfSync", sync + ": " + msg
		})
		if out, stderr, code := cli("", "app", "sync", name); code != 0 {
			t.Fatalf("sync: exit %d: %s%s", code, out, stderr)
		}
	})
}

// freeLoopbackPorts returns n loopback TCP ports that were free a moment
// ago.
func freeLoopbackPorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports
}
