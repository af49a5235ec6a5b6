package cli

import (
	"strings"
	"testing"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
)

// migrate argocd -h says what it does and its exit code; a kubeconfig that
// does not exist is an error before anything is read.
func TestMigrateArgoCDCommandLine(t *testing.T) {
	b := newFakeBed(t, nil, nil)
	help := b.exec("migrate argocd -h", "", false, nil)
	for _, want := range []string{"Exit code: 1 when any row is refused", "--dry-run", "--force", "--namespace string", "(default argocd)", "-o string"} {
		if !strings.Contains(help.stdout, want) {
			t.Errorf("help lacks %q:\n%s", want, help.stdout)
		}
	}
	if help.code != cmdline.ExitOK {
		t.Errorf("help: exit %d", help.code)
	}
	run := b.exec("migrate argocd --kubeconfig $DIR/none --dry-run", "", false, nil)
	if run.code != cmdline.ExitError || !strings.Contains(run.stderr, "kubeconfig") {
		t.Errorf("missing kubeconfig: exit %d, stderr %q", run.code, run.stderr)
	}
	if len(b.api.calls) != 0 {
		t.Errorf("the API was called: %v", b.api.calls)
	}
	if u := b.exec("migrate fluxcd", "", false, nil); u.code != cmdline.ExitUsage {
		t.Errorf("migrate fluxcd: exit %d, want a usage error", u.code)
	}
}
