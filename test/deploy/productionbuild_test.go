package deploy

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestProductionBuild builds the image's entrypoint as the Dockerfile does
// (-tags nodevserver) and runs it. It leaves the Temporal server out (the
// full build has it), refuses dev and temporal with the command to run
// instead, and renders a directory with the workers' code.
func TestProductionBuild(t *testing.T) {
	serverPkgs := func(tags string) []string {
		t.Helper()
		cmd := exec.Command("go", "list", "-deps", "-tags", tags, "./cmd/windlass")
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -tags %q: %v", tags, err)
		}
		var pkgs []string
		for p := range strings.Lines(string(out)) {
			if strings.HasPrefix(p, "go.temporal.io/server/") {
				pkgs = append(pkgs, strings.TrimSpace(p))
			}
		}
		return pkgs
	}
	if len(serverPkgs("")) == 0 {
		t.Error("the full build links no go.temporal.io/server package")
	}
	if pkgs := serverPkgs("nodevserver"); len(pkgs) > 0 {
		t.Errorf("the production build links %d Temporal server packages, say %s", len(pkgs), pkgs[0])
	}

	bin := filepath.Join(t.TempDir(), "windlass")
	build := exec.Command("go", "build", "-tags", "nodevserver", "-o", bin, "./cmd/windlass")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags nodevserver: %v\n%s", err, out)
	}

	for _, cmd := range []string{"temporal", "dev"} {
		run := exec.Command(bin, cmd)
		run.Dir = t.TempDir() // a build that did start would write .windlass/ here
		out, err := run.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Errorf("windlass %s: %v, want exit code 1\n%s", cmd, err, out)
		}
		for _, want := range []string{"windlass-full " + cmd, "not built in"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("windlass %s says %q, want it to mention %q", cmd, out, want)
			}
		}
	}

	dir := t.TempDir()
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lean\ndata:\n  k: v\n"
	if err := os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte(cm), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "render", "--root", dir, "--path", ".").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "name: lean") {
		t.Errorf("windlass render: %v\n%s", err, out)
	}
}
