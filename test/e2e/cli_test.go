package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// windlassCLI builds the windlass binary once per test and returns a
// runner that uses a private config file; the runner returns stdout,
// stderr and the exit code.
func windlassCLI(t *testing.T) func(stdin string, args ...string) (string, string, int) {
	t.Helper()
	cli, _ := windlassCLIBin(t)
	return cli
}

// windlassCLIBin is windlassCLI, and the path of the binary.
func windlassCLIBin(t *testing.T) (func(stdin string, args ...string) (string, string, int), string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "windlass")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "github.com/windlass-cd/windlass/cmd/windlass")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the CLI: %v\n%s", err, out)
	}
	config := filepath.Join(dir, "config")
	return func(stdin string, args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), bin, append(args[:1:1], append([]string{"--config", config}, args[1:]...)...)...)
		cmd.Env = append(os.Environ(), "WINDLASS_SERVER=", "WINDLASS_TOKEN=")
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		code := 0
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatalf("run windlass %v: %v", args, err)
		}
		return out.String(), errOut.String(), code
	}, bin
}

// cliLogin logs the CLI in as admin.
func cliLogin(t *testing.T, cli func(stdin string, args ...string) (string, string, int)) {
	t.Helper()
	if _, stderr, code := cli(bed.adminPassword+"\n", "login", "--server", bed.api.URL, "--username", "admin", "--password-stdin"); code != 0 {
		t.Fatalf("login: exit %d: %s", code, stderr)
	}
}

// cliStep is a command line, its exit code and a text its stdout holds.
type cliStep struct {
	args     []string
	wantCode int
	wantOut  string
}

// runCLISteps runs the steps in order and stops at the first that fails.
func runCLISteps(t *testing.T, cli func(stdin string, args ...string) (string, string, int), steps []cliStep) {
	t.Helper()
	for _, st := range steps {
		out, stderr, code := cli("", st.args...)
		if code != st.wantCode || !strings.Contains(out, st.wantOut) {
			t.Fatalf("windlass %s: exit %d (want %d), stdout:\n%s\nstderr:\n%s", strings.Join(st.args, " "), code, st.wantCode, out, stderr)
		}
	}
}

// A user logs in with the CLI, creates an app from an Argo CD Application
// YAML, syncs it, reads its history, manifests and diff and rolls back;
// errors have their exit codes.
func TestCLIArgoApplication(t *testing.T) {
	cli := windlassCLI(t)
	name, ns := uniq("cli"), uniq("cli")
	repoURL, work := newRepo(t, name)
	push(t, work, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1"))
	manifest := filepath.Join(t.TempDir(), "app.yaml")
	yaml := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  namespace: argocd
spec:
  project: default
  source: {repoURL: %s, targetRevision: main, path: guestbook}
  destination: {server: https://kubernetes.default.svc, namespace: %s}
  syncPolicy:
    syncOptions: [CreateNamespace=true]
`, name, repoURL, ns)
	if err := os.WriteFile(manifest, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cliLogin(t, cli)
	runCLISteps(t, cli, []cliStep{
		{[]string{"app", "create", "-f", manifest}, 0, name},
		{[]string{"app", "sync", name}, 0, "Succeeded"},
		{[]string{"app", "list"}, 0, name},
		{[]string{"app", "get", name, "-o", "json"}, 0, `"sync": "Synced"`},
		{[]string{"app", "history", name}, 0, "sync/default/" + name + "/1"},
		{[]string{"app", "manifests", name}, 0, "guestbook-ui"},
		{[]string{"app", "diff", name, "-o", "json"}, 0, `"status": "Synced"`},
		{[]string{"app", "rollback", name, "1"}, 0, "Succeeded"},
		{[]string{"app", "get", "no-such-app"}, 4, ""},
		{[]string{"app", "bogus-verb"}, 2, ""},
	})
	eventually(t, 30*time.Second, "the app deployed", func() (bool, string) {
		return image(t, ns) == "gcr.io/heptio-images/ks-guestbook-demo:0.1", image(t, ns)
	})
	if _, _, code := cli("", "logout"); code != 0 {
		t.Fatalf("logout: exit %d", code)
	}
	if _, stderr, code := cli("", "app", "list"); code != 3 {
		t.Fatalf("list after logout: exit %d, want 3: %s", code, stderr)
	}
}
