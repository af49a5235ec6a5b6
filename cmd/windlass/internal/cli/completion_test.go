package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
)

var testServerCommands = []string{"dev", "server"}

func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh"} {
		t.Run(shell, func(t *testing.T) {
			var out bytes.Buffer
			if err := newCLI().completion(t.Context(), &out, []string{shell}, testServerCommands); err != nil {
				t.Fatal(err)
			}
			golden(t, "completion "+shell, out.String())
		})
	}
	var out bytes.Buffer
	err := newCLI().completion(t.Context(), &out, []string{"fish"}, nil)
	if got := cmdline.ExitCode(err); got != cmdline.ExitUsage {
		t.Errorf("completion fish: exit code %d, want %d (%v)", got, cmdline.ExitUsage, err)
	}
}

// completionCase is a command line being completed and the candidates
// the script offers.
type completionCase struct {
	line string // the words, the last one being completed
	want string
}

// checkCompletion writes the script of shell and, for each case, runs it
// in the shell with harness, a command line that sources the script ($1)
// and in which $WORDS stands for the case's words; it prints the
// candidates.
func checkCompletion(t *testing.T, shell, harness string, cases []completionCase) {
	t.Helper()
	bin, err := exec.LookPath(shell)
	if err != nil {
		t.Skip("no " + shell)
	}
	var script bytes.Buffer
	if err := newCLI().completion(t.Context(), &script, []string{shell}, testServerCommands); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "_windlass")
	if err := os.WriteFile(path, script.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.line, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), bin, "-f", "-c", strings.ReplaceAll(harness, "$WORDS", tc.line), shell, path)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if diff := cmp.Diff(tc.want, strings.TrimSpace(string(out))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestBashCompletion runs the bash script's function on command lines.
func TestBashCompletion(t *testing.T) {
	checkCompletion(t, "bash", `source "$1"; COMP_WORDS=($WORDS); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _windlass; echo "${COMPREPLY[*]}"`, []completionCase{
		{"windlass ''", "dev server login logout completion account app appset cluster gpg migrate notifications proj repo repocreds settings"},
		{"windlass ap", "app appset"},
		{"windlass app ge", "get get-resource"},
		{"windlass app sync web --pr", "--project --prune"},
		{"windlass --server http://x app get web --sh", "--show-params"},
		{"windlass proj role l", "list-tokens"},
		{"windlass account can", "can-i"},
		{"windlass completion ''", "bash zsh"},
		{"windlass settings resource-customizations ''", "get set"},
		{"windlass settings resource-customizations set --re", "--repo --revision"},
	})
}

// TestZshCompletion runs the zsh script's function with compadd and
// compdef stubbed: it prints the candidates, which zsh then filters.
func TestZshCompletion(t *testing.T) {
	checkCompletion(t, "zsh", `compdef() { :; }; source "$1"; compadd() { shift; echo "$@"; }; _files() { echo "(files)"; }; words=($WORDS); CURRENT=${#words}; _windlass`, []completionCase{
		{"windlass account ''", "list get-user-info update-password generate-token list-tokens delete-token can-i"},
		{"windlass --server http://x app wait web --d", "--config --degraded --health -l --operation --project --selector --server --suspended --sync --timeout"},
		{"windlass proj role ''", "create-token list-tokens delete-token"},
		{"windlass app create -f ''", "(files)"},
		{"windlass settings ''", "resource-customizations"},
	})
}

func TestCLIAccountCanI(t *testing.T) {
	runCases(t, []cliCase{
		{
			name:   "account can-i yes",
			args:   "account can-i sync applications default/web",
			routes: map[string][]reply{"GET /api/v1/session/can": ok(map[string]any{"results": []map[string]any{{"resource": "applications", "action": "sync", "object": "default/web", "allowed": true}}})},
			want:   []string{"GET /api/v1/session/can?check=applications%2Csync%2Cdefault%2Fweb"},
		},
		{
			name:   "account can-i no json",
			args:   "account can-i delete clusters * -o json",
			routes: map[string][]reply{"GET /api/v1/session/can": ok(map[string]any{"results": []map[string]any{{"resource": "clusters", "action": "delete", "object": "*", "allowed": false}}})},
			want:   []string{"GET /api/v1/session/can?check=clusters%2Cdelete%2C%2A"},
		},
		{
			name:   "account can-i unknown resource",
			args:   "account can-i get gpgkeys *",
			routes: map[string][]reply{"GET /api/v1/session/can": {problemReply(400, `check "gpgkeys,get,*": unknown resource "gpgkeys"`, "check")}},
			want:   []string{"GET /api/v1/session/can?check=gpgkeys%2Cget%2C%2A"},
			code:   cmdline.ExitError,
		},
		{name: "account can-i without object", args: "account can-i sync applications", code: cmdline.ExitUsage},
	})
}
