package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
)

var sessionReply = ok(map[string]any{"token": testToken, "expiresAt": t0.Add(24 * time.Hour)})

func emptyList() []reply { return ok(map[string]any{"items": []any{}}) }

func TestLoginCases(t *testing.T) {
	loginBody := `POST /api/v1/session {"password":"` + testPassword + `","username":"admin"}`
	runCases(t, []cliCase{
		{
			name:   "login password-stdin",
			args:   "login --server $SERVER --username admin --password-stdin --config $DIR/new/config",
			stdin:  testPassword + "\n",
			routes: map[string][]reply{"POST /api/v1/session": sessionReply},
			want:   []string{loginBody},
			auth:   "-",
		},
		{
			name:   "login on a terminal",
			args:   "login --config $DIR/new/config",
			env:    map[string]string{"WINDLASS_SERVER": "$SERVER"},
			stdin:  "admin\n" + testPassword + "\n",
			tty:    true,
			routes: map[string][]reply{"POST /api/v1/session": sessionReply},
			want:   []string{loginBody},
			auth:   "-",
		},
		{
			name:   "login wrong password",
			args:   "login --username admin --password-stdin --config $DIR/new/config --server $SERVER",
			stdin:  testPassword + "\n",
			routes: map[string][]reply{"POST /api/v1/session": {problemReply(401, "invalid username or password", "")}},
			want:   []string{loginBody},
			auth:   "-",
			code:   cmdline.ExitUnauthorized,
		},
		{
			name:   "login sso",
			args:   "login --sso --server $SERVER --config $DIR/new/config",
			routes: map[string][]reply{"GET /api/v1/sso/config": ok(map[string]any{"enabled": false})},
			want:   []string{"GET /api/v1/sso/config"},
			auth:   "-",
			code:   cmdline.ExitError,
		},
		{
			name: "login sso without a CLI client",
			args: "login --sso --server $SERVER --config $DIR/new/config",
			routes: map[string][]reply{"GET /api/v1/sso/config": ok(map[string]any{
				"enabled": true, "name": "Dex", "issuer": "https://windlass.example.com/api/dex"})},
			want: []string{"GET /api/v1/sso/config"},
			auth: "-",
			code: cmdline.ExitError,
		},
		{name: "login sso with a user name", args: "login --sso --username admin", code: cmdline.ExitUsage},
		{name: "login without username", args: "login --password-stdin", code: cmdline.ExitUsage},
		{name: "login without password", args: "login --username admin", code: cmdline.ExitUsage},
		{
			name:   "logout",
			args:   "logout",
			routes: map[string][]reply{"DELETE /api/v1/session": {{status: 204}}},
			want:   []string{"DELETE /api/v1/session"},
		},
		{
			name:   "logout of an expired session",
			args:   "logout",
			routes: map[string][]reply{"DELETE /api/v1/session": {problemReply(401, "token expired", "")}},
			want:   []string{"DELETE /api/v1/session"},
		},
		{
			name:   "logout fails",
			args:   "logout",
			routes: map[string][]reply{"DELETE /api/v1/session": {problemReply(503, "the revocation store is unavailable", "")}},
			want:   []string{"DELETE /api/v1/session"},
			code:   cmdline.ExitError,
		},
		{name: "logout of another server", args: "logout --server https://windlass.example.com"},
		{
			name:   "the token of the environment wins",
			args:   "app list",
			env:    map[string]string{"WINDLASS_TOKEN": "env-token"},
			routes: map[string][]reply{"GET " + appsPath: emptyList()},
			want:   []string{"GET /api/v1/applications"},
			auth:   "Bearer env-token",
		},
		{
			name:   "no token goes to another server",
			args:   "app list --server $LOCALHOST",
			routes: map[string][]reply{"GET " + appsPath: emptyList()},
			want:   []string{"GET /api/v1/applications"},
			auth:   "-",
		},
		{
			name:   "no token goes to the server of the environment",
			args:   "app list",
			env:    map[string]string{"WINDLASS_SERVER": "$LOCALHOST/"},
			routes: map[string][]reply{"GET " + appsPath: emptyList()},
			want:   []string{"GET /api/v1/applications"},
			auth:   "-",
		},
	})
}

// TestLoginConfigFile logs in, uses the stored token, and logs out.
func TestLoginConfigFile(t *testing.T) {
	b := newFakeBed(t, map[string][]reply{
		"POST /api/v1/session":   sessionReply,
		"GET " + appsPath:        emptyList(),
		"DELETE /api/v1/session": {{status: 204}},
	}, nil)
	cfg := filepath.Join(b.dir, "sub", "windlass", "config")
	lastAuth := func() string {
		reqs := b.api.requests()
		return reqs[len(reqs)-1].auth
	}
	mustRun := func(args, stdin string) {
		t.Helper()
		if run := b.exec(args+" --config "+cfg, stdin, false, nil); run.code != 0 {
			t.Fatalf("%s: exit %d: %s", args, run.code, run.stderr)
		}
	}

	mustRun("login --server $SERVER --username admin --password-stdin", testPassword+"\n")
	for path, want := range map[string]os.FileMode{cfg: 0o600, filepath.Dir(cfg): 0o700} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %04o, want %04o", path, got, want)
		}
	}
	raw, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), testPassword) {
		t.Errorf("the config file holds the password:\n%s", raw)
	}
	c := &cli{stderr: &strings.Builder{}}
	got, err := c.loadConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(clientConfig{Server: b.api.srv.URL, Username: "admin", Token: testToken}, got); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}

	mustRun("app list", "")
	if got := lastAuth(); got != "Bearer "+testToken {
		t.Errorf("app list after login: Authorization %q", got)
	}

	mustRun("logout", "")
	if got := lastAuth(); got != "Bearer "+testToken {
		t.Errorf("logout: Authorization %q", got)
	}
	got, err = c.loadConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(clientConfig{Server: b.api.srv.URL, Username: "admin"}, got); diff != "" {
		t.Errorf("config after logout (-want +got):\n%s", diff)
	}
	mustRun("app list", "")
	if got := lastAuth(); got != "" {
		t.Errorf("app list after logout: Authorization %q", got)
	}
}

// TestLoginConfigLocation checks where the config file goes without
// --config.
func TestLoginConfigLocation(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		path string // under the directory
	}{
		{"XDG_CONFIG_HOME", map[string]string{"XDG_CONFIG_HOME": "$DIR/xdg", "HOME": "$DIR/home"}, "xdg/windlass/config"},
		{"relative XDG_CONFIG_HOME is ignored", map[string]string{"XDG_CONFIG_HOME": "xdg", "HOME": "$DIR/home"}, "home/.config/windlass/config"},
		{"HOME", map[string]string{"HOME": "$DIR/home"}, "home/.config/windlass/config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newFakeBed(t, map[string][]reply{"POST /api/v1/session": sessionReply, "GET " + appsPath: emptyList()}, nil)
			run := b.exec("login --server $SERVER --username admin --password-stdin", testPassword+"\n", false, tt.env)
			if run.code != 0 {
				t.Fatalf("login: exit %d: %s", run.code, run.stderr)
			}
			if _, err := os.Stat(filepath.Join(b.dir, tt.path)); err != nil {
				t.Fatalf("no config file: %v", err)
			}
			run = b.exec("app list", "", false, tt.env)
			reqs := b.api.requests()
			if run.code != 0 || reqs[len(reqs)-1].auth != "Bearer "+testToken {
				t.Errorf("app list: exit %d, Authorization %q", run.code, reqs[len(reqs)-1].auth)
			}
		})
	}
}

// TestLoginConfigFormats reads a JSON config file, and warns when others
// may read one that holds a token.
func TestLoginConfigFormats(t *testing.T) {
	b := newFakeBed(t, map[string][]reply{"GET " + appsPath: emptyList()}, nil)
	cfg := filepath.Join(b.dir, "config.json")
	content := fmt.Sprintf(`{"server": %q, "username": "admin", "token": %q}`, b.api.srv.URL+"/", testToken)
	if err := os.WriteFile(cfg, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	run := b.exec("app list --config "+cfg, "", false, nil)
	if run.code != 0 {
		t.Fatalf("exit %d: %s", run.code, run.stderr)
	}
	if got := b.api.requests()[0].auth; got != "Bearer "+testToken {
		t.Errorf("Authorization %q", got)
	}
	golden(t, "config readable by others", transcript("app list --config $DIR/config.json", run))
}

func TestCLIExitCodes(t *testing.T) {
	tests := []struct {
		err  error
		code int
		msg  string
	}{
		{&apiError{Status: 401, Title: "Unauthorized", noHint: true}, cmdline.ExitUnauthorized, "Unauthorized"},
		{fmt.Errorf("x: %w", &apiError{Status: 403, Title: "Forbidden", noHint: true}), cmdline.ExitUnauthorized, "x: Forbidden"},
		{&apiError{Status: 404, Title: "Not Found", Detail: "application not found"}, cmdline.ExitNotFound, "Not Found: application not found"},
		{&apiError{Status: 409, Title: "Conflict"}, cmdline.ExitFailed, "Conflict"},
		{&apiError{Status: 422, Title: "Unprocessable Entity", Field: "url"}, cmdline.ExitError, "Unprocessable Entity (field url)"},
		{&apiError{Status: 500, Title: "Internal Server Error"}, cmdline.ExitError, "Internal Server Error"},
		{cmdline.WithCode(exitDiffError, &apiError{Status: 404, Title: "Not Found"}), exitDiffError, "Not Found"},
		{fmt.Errorf("wrapped: %w", timedOut(time.Minute, "waiting")), cmdline.ExitTimeout, "wrapped: timed out after 1m0s waiting"},
	}
	for _, tt := range tests {
		if got := cmdline.ExitCode(tt.err); got != tt.code {
			t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.code)
		}
		if got := cmdline.Message(tt.err); got != tt.msg {
			t.Errorf("Message(%v) = %q, want %q", tt.err, got, tt.msg)
		}
	}
}

func TestCLIReorder(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Bool("prune", false, "")
	fs.String("revision", "", "")
	tests := []struct{ in, want []string }{
		{[]string{"web", "--prune", "--revision", "v1"}, []string{"--prune", "--revision", "v1", "--", "web"}},
		{[]string{"--revision=v1", "web", "-"}, []string{"--revision=v1", "--", "web", "-"}},
		{[]string{"web", "--", "--prune"}, []string{"--", "web", "--prune"}},
		{[]string{"web", "--unknown", "x"}, []string{"--unknown", "--", "web", "x"}},
		{[]string{"web", "--revision"}, []string{"--revision", "--", "web"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, reorder(fs, tt.in)); diff != "" {
			t.Errorf("reorder(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestCLIGroupsAreCommands(t *testing.T) {
	for group := range groups {
		if !IsCommand(group) {
			t.Errorf("%s is not dispatched", group)
		}
	}
}

func TestRunUnknownVerb(t *testing.T) {
	// rollback needs NAME and ID.
	if err := Run(t.Context(), "app", []string{"rollback", "x"}); !errors.Is(err, cmdline.ErrUsage) {
		t.Fatalf("err = %v, want usage", err)
	}
}
