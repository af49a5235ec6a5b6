package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// The secrets of the tests: none may ever be printed, except the minted
// tokens by the commands that mint them.
const (
	testToken    = "session-token-3f9a7c"
	testPassword = "pa55word-x1"
	mintedToken  = "minted-token-b41d"
)

// reply is one answer of the fake API.
type reply struct {
	status int
	body   string
	// after names a route ("GET /path") whose last reply must have been
	// served before this reply is: a sync answers once its progress was
	// polled.
	after string
	// block answers only when the client gives up.
	block bool
	// header is added to the answer.
	header http.Header
}

// ok answers 200 with v as JSON.
func ok(v any) []reply { return []reply{answer(http.StatusOK, v)} }

func answer(status int, v any) reply {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return reply{status: status, body: string(b)}
}

func problemReply(status int, detail, field string) reply {
	return answer(status, map[string]any{
		"type": "about:blank", "title": http.StatusText(status), "status": status, "detail": detail, "field": field,
	})
}

// route serves its replies in order, the last one again and again.
type route struct {
	replies   []reply
	served    int
	exhausted chan struct{}
}

// request is one request the fake API received.
type request struct {
	method, path, query, auth, contentType, body string
}

// String is the form the cases list requests in: "METHOD /path?query body".
func (r request) String() string {
	s := r.method + " " + r.path
	if r.query != "" {
		s += "?" + r.query
	}
	if r.body != "" {
		s += " " + r.body
	}
	return s
}

// fakeAPI is an httptest server that follows the REST API's contract for
// the routes it is given ("METHOD /escaped/path") and records requests.
type fakeAPI struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	routes map[string]*route
	calls  []request
}

func newFakeAPI(t *testing.T, routes map[string][]reply) *fakeAPI {
	t.Helper()
	f := &fakeAPI{t: t, routes: map[string]*route{}}
	for k, r := range routes {
		f.routes[k] = &route{replies: r, exhausted: make(chan struct{})}
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := request{method: r.Method, path: r.URL.EscapedPath(), query: r.URL.RawQuery,
		auth: r.Header.Get("Authorization"), contentType: r.Header.Get("Content-Type"), body: string(body)}
	key := r.Method + " " + req.path
	f.mu.Lock()
	f.calls = append(f.calls, req)
	rt := f.routes[key]
	var rep reply
	if rt != nil {
		rep = rt.replies[min(rt.served, len(rt.replies)-1)]
		rt.served++
		if rt.served == len(rt.replies) {
			close(rt.exhausted)
		}
	}
	f.mu.Unlock()
	if rt == nil {
		f.t.Errorf("unexpected request %s", req)
		w.WriteHeader(http.StatusTeapot)
		return
	}
	if rep.after != "" {
		select {
		case <-f.routes[rep.after].exhausted:
		case <-time.After(10 * time.Second):
			f.t.Errorf("%s: %s was not polled to its end", key, rep.after)
		}
	}
	if rep.block {
		<-r.Context().Done()
		return
	}
	for k, vs := range rep.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if rep.body != "" {
		if rep.status >= 400 {
			w.Header().Set("Content-Type", "application/problem+json")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
	}
	w.WriteHeader(rep.status)
	io.WriteString(w, rep.body)
}

// localhost is the API's URL by another name: a server the config file
// holds no token for.
func (f *fakeAPI) localhost() string {
	return strings.Replace(f.srv.URL, "127.0.0.1", "localhost", 1)
}

func (f *fakeAPI) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// cliCase is one run of a client command against the fake API.
type cliCase struct {
	name string
	// args are the command line after "windlass", split at spaces; $DIR is
	// the case's directory (where files are written).
	args   string
	stdin  string
	env    map[string]string
	files  map[string]string
	routes map[string][]reply
	// want lists the distinct requests made, sorted ("METHOD /path?query
	// body"); polls repeat, and overlap the request they poll for.
	want []string
	code int
	// tty makes stdin and stderr terminals.
	tty bool
	// auth is the Authorization every request must carry (default the
	// logged-in token; "-" for none).
	auth string
	// printed is a secret the command may print (a minted token).
	printed string
}

// cliRun is what a run printed and returned.
type cliRun struct {
	stdout, stderr string
	code           int
	dir            string
	api            *fakeAPI
}

// fakeBed is a fake API and a directory with files and a config file
// logged in to the API ($DIR/config).
type fakeBed struct {
	t   *testing.T
	api *fakeAPI
	dir string
	cfg string
}

func newFakeBed(t *testing.T, routes map[string][]reply, files map[string]string) *fakeBed {
	t.Helper()
	b := &fakeBed{t: t, api: newFakeAPI(t, routes), dir: t.TempDir()}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(b.dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b.cfg = filepath.Join(b.dir, "config")
	if err := saveConfig(b.cfg, clientConfig{Server: b.api.srv.URL, Username: "admin", Token: testToken}); err != nil {
		t.Fatal(err)
	}
	return b
}

// exec runs a command line in-process, as main would: $DIR and $SERVER in
// args and env stand for the directory and the API's URL; --config $DIR/config
// is added unless args give --config or XDG_CONFIG_HOME or HOME is set.
func (b *fakeBed) exec(args, stdin string, tty bool, env map[string]string) cliRun {
	expand := strings.NewReplacer("$DIR", b.dir, "$SERVER", b.api.srv.URL, "$LOCALHOST", b.api.localhost()).Replace
	argv := strings.Fields(expand(args))
	vars := map[string]string{}
	for k, v := range env {
		vars[k] = expand(v)
	}
	if !slices.Contains(argv, "--config") && vars["XDG_CONFIG_HOME"] == "" && vars["HOME"] == "" {
		argv = append(argv, "--config", b.cfg)
	}
	var stdout, stderr bytes.Buffer
	in := strings.NewReader(stdin)
	var c *cli
	c = &cli{
		stdin: in, stdout: &stdout, stderr: &stderr,
		getenv:     func(k string) string { return vars[k] },
		terminal:   func(s any) bool { return tty && (s == in || s == &stderr) },
		readHidden: func() (string, error) { return c.readLine() },
		poll:       time.Millisecond,
		http:       b.api.srv.Client(),
	}
	code := cmdline.Report(&stderr, c.run(b.t.Context(), argv[0], argv[1:]))
	return cliRun{stdout: stdout.String(), stderr: stderr.String(), code: code, dir: b.dir, api: b.api}
}

// runCase runs a case in its own fakeBed.
func runCase(t *testing.T, tc cliCase) cliRun {
	t.Helper()
	return newFakeBed(t, tc.routes, tc.files).exec(tc.args, tc.stdin, tc.tty, tc.env)
}

// checkCase runs a case and checks its requests, exit code, secrets and
// output (the golden file testdata/<name>.golden).
func checkCase(t *testing.T, tc cliCase) {
	t.Helper()
	run := runCase(t, tc)
	wantAuth := "Bearer " + testToken
	switch tc.auth {
	case "":
	case "-":
		wantAuth = ""
	default:
		wantAuth = tc.auth
	}
	var got []string
	for _, r := range run.api.requests() {
		if r.auth != wantAuth {
			t.Errorf("%s: Authorization %q, want %q", r, r.auth, wantAuth)
		}
		if !slices.Contains(got, r.String()) {
			got = append(got, r.String())
		}
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(tc.want))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if run.code != tc.code {
		t.Errorf("exit code %d, want %d; stderr:\n%s", run.code, tc.code, run.stderr)
	}
	out := run.stdout + run.stderr
	for _, secret := range []string{testToken, testPassword, mintedToken} {
		if secret != tc.printed && strings.Contains(out, secret) {
			t.Errorf("the output shows the secret %q:\n%s", secret, out)
		}
	}
	golden(t, tc.name, transcript(tc.args, run))
}

// transcript is a run as the golden files hold it, with the fake API's
// URL and the case's directory replaced by fixed names.
func transcript(args string, run cliRun) string {
	s := fmt.Sprintf("$ windlass %s\n--- stdout\n%s--- stderr\n%s--- exit %d\n", args, run.stdout, run.stderr, run.code)
	s = strings.ReplaceAll(s, run.api.srv.URL, "http://SERVER")
	s = strings.ReplaceAll(s, run.api.localhost(), "http://LOCALHOST")
	s = strings.ReplaceAll(s, run.dir, "$DIR")
	return strings.NewReplacer("\r", "<CR>", "\x1b[K", "<EL>").Replace(s)
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// golden compares got with testdata/<name>.golden, or rewrites it
// with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", unsafeName.ReplaceAllString(name, "_")+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

func runCases(t *testing.T, cases []cliCase) {
	t.Helper()
	names := map[string]bool{}
	for _, tc := range cases {
		if names[tc.name] {
			t.Fatalf("two cases are named %q", tc.name)
		}
		names[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkCase(t, tc)
		})
	}
}
