package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
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
	"github.com/windlass-cd/windlass/internal/temporalx"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/workflows"
)

// devProcess is a windlass dev process of the real binary, and a CLI
// logged in to it.
type devProcess struct {
	// api is the API's host:port, temporal Temporal's; dir is the
	// working directory, whose .windlass is the data dir.
	api, temporal, dir string
	cmd                *exec.Cmd
	cli                func(stdin string, args ...string) (string, string, int)
	// bin and config run the CLI without the runner (with a deadline).
	bin, config string
	// token is an admin session, for calls the CLI does not make.
	token string
	logs  *syncbuf.Buffer
}

// startDev runs windlass dev as make run does: from a directory of its
// own, with the relative default data dir and default settings (its own
// ports and management namespace aside, to share the test bed), plus env.
// It waits until dev is ready and logs the CLI in with the password file
// dev writes.
func startDev(t *testing.T, env ...string) *devProcess {
	t.Helper()
	cli, bin := windlassCLIBin(t)
	d := &devProcess{dir: t.TempDir(), cli: cli, bin: bin, config: filepath.Join(filepath.Dir(bin), "config"), logs: &syncbuf.Buffer{}}
	ports := freeLoopbackPorts(t, 2)
	d.api, d.temporal = fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	d.cmd = exec.Command(bin, "dev")
	d.cmd.Dir = d.dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WINDLASS_") && !strings.HasPrefix(kv, "TEMPORAL_") {
			d.cmd.Env = append(d.cmd.Env, kv)
		}
	}
	d.cmd.Env = append(d.cmd.Env, "KUBECONFIG="+bed.env.Cluster.Kubeconfig,
		"WINDLASS_API_ADDRESS="+d.api, "WINDLASS_TEMPORAL_ADDRESS="+d.temporal,
		"WINDLASS_TEMPORAL_UI_ADDRESS=off", "WINDLASS_MANAGEMENT_NAMESPACE="+uniq("dev"))
	d.cmd.Env = append(d.cmd.Env, env...)
	d.cmd.Stdout, d.cmd.Stderr = d.logs, d.logs
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = d.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = d.cmd.Process.Kill()
		}
		// A killed dev leaves its embedded Redis running (it runs detached,
		// and only the next dev on the same data dir stops it).
		_ = testbed.StopDir(filepath.Join(d.dir, ".windlass", "redis"))
		if t.Failed() {
			t.Logf("windlass dev:\n%s", d.logs.String())
		}
	})
	pwFile := filepath.Join(d.dir, ".windlass", "initial-admin-password")
	eventually(t, 3*time.Minute, "windlass dev is ready", func() (bool, string) {
		code, err := d.ready()
		_, perr := os.Stat(pwFile)
		return code == http.StatusOK && perr == nil, fmt.Sprint(code, err, perr)
	})
	d.login(t)
	return d
}

// login logs the CLI and d.token in as admin, with the password file dev
// writes.
func (d *devProcess) login(t *testing.T) {
	t.Helper()
	pw, err := os.ReadFile(filepath.Join(d.dir, ".windlass", "initial-admin-password"))
	if err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := d.cli(string(pw), "login", "--server", "http://"+d.api, "--username", "admin", "--password-stdin"); code != 0 {
		t.Fatalf("login: exit %d: %s", code, stderr)
	}
	var sess struct{ Token string }
	if code := d.call(t, http.MethodPost, "/api/v1/session", map[string]string{"username": "admin", "password": strings.TrimSpace(string(pw))}, &sess); code != http.StatusOK || sess.Token == "" {
		t.Fatalf("login through the API: status %d", code)
	}
	d.token = sess.Token
}

// ready is the status code of dev's /readyz.
func (d *devProcess) ready() (int, error) {
	resp, err := http.Get("http://" + d.api + "/readyz")
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// call does an API request of dev's as admin (callBase).
func (d *devProcess) call(t *testing.T, method, path string, body, out any) int {
	t.Helper()
	return callBase(t, "http://"+d.api, d.token, method, path, body, out)
}

// createApp creates an app of the default project with the CLI, from an
// Argo CD Application (argoApp).
func (d *devProcess) createApp(t *testing.T, name, repoURL, source, ns string) {
	t.Helper()
	manifest := filepath.Join(t.TempDir(), "app.yaml")
	if err := os.WriteFile(manifest, []byte(argoApp(name, repoURL, source, ns)), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, stderr, code := d.cli("", "app", "create", "-f", manifest); code != 0 {
		t.Fatalf("create %s: exit %d: %s%s", name, code, out, stderr)
	}
}

// argoApp is an Argo CD Application of the default project into ns;
// source holds the source's fields after repoURL and targetRevision, as
// YAML indented by four spaces.
func argoApp(name, repoURL, source, ns string) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
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
`, name, repoURL, source, ns)
}

// syncAsync starts a sync of name with the CLI, without waiting for it.
func (d *devProcess) syncAsync(t *testing.T, name string) {
	t.Helper()
	if out, stderr, code := d.cli("", "app", "sync", name, "--async"); code != 0 {
		t.Fatalf("sync %s: exit %d: %s%s", name, code, out, stderr)
	}
}

// waitApps polls each app with the CLI until cond holds for it, or fails
// the test after timeout; cond's string says what it waits for.
func (d *devProcess) waitApps(t *testing.T, timeout time.Duration, what string, names []string, cond func(name string, v workflows.AppView) (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	pending := names
	for {
		var still, states []string
		for _, n := range pending {
			v, state, ok := d.app(n)
			if ok {
				done, want := cond(n, v)
				if done {
					continue
				}
				state = want + "; is " + state
			}
			still = append(still, n)
			states = append(states, n+": "+state)
		}
		if pending = still; len(pending) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s:\n%s", timeout, what, strings.Join(states, "\n"))
		}
		time.Sleep(time.Second)
	}
}

// historiesContain looks for b in every event of every workflow of dev's
// Temporal (scanHistories); it returns where it found it ("" for nowhere)
// and how many events it scanned.
func (d *devProcess) historiesContain(t *testing.T, b []byte) (string, int) {
	t.Helper()
	c, err := temporalx.Dial(t.Context(), temporalx.ClientConfig{HostPort: d.temporal, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var where []string
	n := scanHistories(t, c, [][]byte{b}, func(_ int, w string) { where = append(where, w) })
	return strings.Join(where, ", "), n
}

// app is the app as `windlass app get -o json` shows it; ok is false
// when the CLI fails.
func (d *devProcess) app(name string) (v workflows.AppView, state string, ok bool) {
	out, stderr, code := d.cli("", "app", "get", name, "-o", "json")
	if code != 0 {
		return v, fmt.Sprintf("app get: exit %d: %s", code, stderr), false
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		return v, err.Error(), false
	}
	st := v.Status
	return v, fmt.Sprintf("%s/%s at %.7s, %d syncs: %s", st.Sync, st.Health, st.SHA, len(v.History), st.Message), true
}

// vmHWM is the peak resident set of dev's process, in bytes.
func (d *devProcess) vmHWM(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err != nil {
				t.Fatalf("VmHWM %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", d.cmd.Process.Pid)
	return 0
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
