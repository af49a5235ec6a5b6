package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/windlass-cd/windlass/internal/settings"
)

// The verbs argocd app has beyond create, sync and get, against the
// test bed: an app created from flags, synced by label selector, its
// resources listed, no operation to terminate, no deletion to confirm, its
// parameters set and unset, patched, edited in $EDITOR, given a second
// source and back, and deleted by selector.
func TestCLIParityVerbs(t *testing.T) {
	cli, bin := windlassCLIBin(t)
	name, ns, tier := uniq("clip"), uniq("clip"), uniq("tier")
	repoURL, work := newRepo(t, name)
	push(t, work, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1"))
	editor := filepath.Join(t.TempDir(), "edit.sh")
	if err := os.WriteFile(editor, []byte("sed -i -e 's/refreshSeconds: 600/refreshSeconds: 700/' \"$1\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("WINDLASS_EDITOR", "sh "+editor)
	cliLogin(t, cli)
	runCLISteps(t, cli, []cliStep{
		{[]string{"app", "create", name, "--repo", repoURL, "--path", "guestbook", "--revision", "main", "--dest-server", "https://kubernetes.default.svc",
			"--dest-namespace", ns, "--sync-option", "CreateNamespace=true", "--label", "tier=" + tier}, 0, "default/" + name + " created"},
		{[]string{"app", "get", name, "--refresh"}, 0, "Reconciled"},
		{[]string{"app", "diff", name}, 1, "guestbook-ui"}, // nothing applied yet: differences exit 1
		{[]string{"app", "sync", "-l", "tier=" + tier}, 0, "Succeeded"},
		{[]string{"app", "wait", name, "--health", "--sync", "--timeout", "2m"}, 0, "health Healthy"},
		{[]string{"app", "wait", name, "--degraded", "--suspended", "--timeout", "1s"}, 6, ""}, // Healthy is neither
		{[]string{"app", "wait", name, "--degraded", "--health", "--timeout", "1m"}, 0, "health Healthy"},
		{[]string{"app", "get", name, "--hard-refresh"}, 0, "Reconciled"},
		{[]string{"app", "diff", name}, 0, ""},
		{[]string{"app", "resources", name}, 0, "guestbook-ui"},
		{[]string{"app", "terminate-op", name}, 5, ""},     // nothing running: Conflict
		{[]string{"app", "confirm-deletion", name}, 5, ""}, // nothing waits: Conflict
		{[]string{"app", "set", name, "--directory-recurse", "true", "--directory-exclude", "*.md"}, 0, "updated"},
		{[]string{"app", "get", name, "--show-params"}, 0, "--directory-exclude"},
		{[]string{"app", "unset", name, "--directory-recurse", "--directory-exclude"}, 0, "updated"},
		{[]string{"app", "patch", name, "--patch", `{"refreshSeconds":600}`}, 0, "updated"},
		{[]string{"app", "patch", name, "--type", "json", "--patch", `[{"op":"add","path":"/labels/patched","value":"yes"}]`}, 0, "updated"},
		{[]string{"app", "edit", name, "-o", "json"}, 0, `"refreshSeconds": 700`},
		{[]string{"app", "add-source", name, "--repo", repoURL, "--revision", "main", "--ref", "values"}, 0, "updated"},
		{[]string{"app", "get", name}, 0, "Source 2:"},
		{[]string{"app", "remove-source", name, "--source-position", "2"}, 0, "updated"},
		{[]string{"app", "get", name, "-o", "json"}, 0, `"patched": "yes"`},
		{[]string{"account", "can-i", "sync", "applications", "default/" + name}, 0, "yes"},
		{[]string{"app", "delete", "-l", "tier=" + tier, "-y"}, 0, "application " + name + " deleted"},
		{[]string{"app", "sync", "-l", "tier=" + tier}, 4, ""},
	})
	out, err := exec.CommandContext(t.Context(), bin, "completion", "bash").Output()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("[%q]=", "windlass app set")) {
		t.Fatalf("completion bash: %v:\n%s", err, out)
	}
}

// The health library's Git source through the CLI: set, read back,
// refused when it leaves the repository, and cleared.
func TestCLISettingsCustomizations(t *testing.T) {
	cli := windlassCLI(t)
	name := uniq("lib")
	repoURL, work := newRepo(t, name)
	push(t, work, map[string]string{"lib/example.com/Widget/health.lua": "return {status = \"Healthy\"}\n"})
	cliLogin(t, cli)
	t.Cleanup(func() { _ = bed.settings.PutCustomizations(context.Background(), settings.CustomizationsSource{}) })
	runCLISteps(t, cli, []cliStep{
		{[]string{"settings", "resource-customizations", "set", "--repo", repoURL, "--path", "lib", "--revision", "main"}, 0, "source set: " + repoURL + ", path lib, revision main"},
		{[]string{"settings", "resource-customizations", "get"}, 0, "Source:  " + repoURL + ", path lib, revision main"},
		{[]string{"settings", "resource-customizations", "get", "-o", "json"}, 0, `"path": "lib"`},
		{[]string{"settings", "resource-customizations", "set", "--repo", repoURL, "--path", "../up"}, 1, ""},
		{[]string{"settings", "resource-customizations", "get"}, 0, "path lib"}, // the refused source changed nothing
		{[]string{"settings", "resource-customizations", "set"}, 2, ""},
		{[]string{"settings", "resource-customizations", "set", "--clear"}, 0, "cleared"},
		{[]string{"settings", "resource-customizations", "get"}, 0, "none set through the API"},
	})
}
