package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/labstack/echo/v5"
)

type fakeFinder struct {
	apps map[string][]App
	err  error

	mu    sync.Mutex
	calls []string
}

func (f *fakeFinder) AppsForRepo(_ context.Context, normalizedRepoURL string) ([]App, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, normalizedRepoURL)
	if f.err != nil {
		return nil, f.err
	}
	return f.apps[normalizedRepoURL], nil
}

type refreshCall struct{ App, Reason string }

type fakeRefresher struct {
	fail map[string]bool

	mu      sync.Mutex
	calls   []refreshCall
	ctxErrs []error
}

func (r *fakeRefresher) Refresh(ctx context.Context, appID, reason string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, refreshCall{appID, reason})
	r.ctxErrs = append(r.ctxErrs, ctx.Err())
	if r.fail[appID] {
		return errors.New("workflow service unavailable")
	}
	return nil
}

func newTextLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// testApps are the applications the fake Finder knows, by normalised URL.
func testApps() map[string][]App {
	bbServer := App{ID: "app/platform/cluster-apps", TargetRevisions: []string{"release/2024.05"}}
	return map[string][]App{
		"github.com/acme/gitops": {
			{ID: "app/default/guestbook", TargetRevisions: []string{"HEAD"}},
			{ID: "app/default/frontend", TargetRevisions: []string{"main"}},
			{ID: "app/default/pinned", TargetRevisions: []string{"6113728f27ae82c7b1a177c8d03f9e96e0adf246"}},
			{ID: "app/default/feature", TargetRevisions: []string{"feature/login"}},
			{ID: "app/staging/api", TargetRevisions: []string{"develop", "refs/heads/main"}},
			{ID: "app/prod/release", TargetRevisions: []string{"v1.*"}},
			{ID: "app/prod/exact", TargetRevisions: []string{"refs/tags/v1.4.2"}},
			{ID: "app/prod/next", TargetRevisions: []string{">=2.0.0"}},
		},
		"gitlab.example.com/infra/platform-config": {
			{ID: "app/infra/staging", TargetRevisions: []string{"staging"}},
			{ID: "app/infra/head", TargetRevisions: []string{""}},
			{ID: "app/infra/releases", TargetRevisions: []string{"~2.3"}},
		},
		"bitbucket.org/acme-team/deploy-config": {
			{ID: "app/ops/payments", TargetRevisions: []string{"HEAD"}},
			{ID: "app/ops/experiment", TargetRevisions: []string{"feature/old-experiment"}},
			{ID: "app/ops/release", TargetRevisions: []string{"3.1.x"}},
			{ID: "app/ops/pinned", TargetRevisions: []string{"709d658dc5b6d6afcd46049c2f332ee3f515a67d"}},
		},
		// One app with a source on each URL form of the same repository.
		"bitbucket.example.com:7999/plat/cluster-apps":  {bbServer},
		"bitbucket.example.com/scm/plat/cluster-apps":   {bbServer},
		"bitbucket.example.com/scm/plat/something-else": {{ID: "app/platform/other", TargetRevisions: []string{"HEAD"}}},
	}
}

type served struct {
	status int
	res    result
	msg    string // an error's message
}

func serve(t *testing.T, h *Handler, r *http.Request) served {
	t.Helper()
	e := echo.New()
	e.POST(Path, h.Handle)
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, r)
	var body struct {
		result
		Message string `json:"message"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("response %d %q: %v", rec.Code, rec.Body, err)
	}
	return served{rec.Code, body.result, body.Message}
}

func TestHandle(t *testing.T) {
	ghPush := fixture(t, "github-push-branch.json")
	const ghSHA = "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c"
	ghReason := "github webhook: push to refs/heads/main at " + ghSHA
	ghTagReason := "github webhook: push to refs/tags/v1.4.2 at a3f5c4b0e2d94c1b8e7f6a5d4c3b2a1908f7e6d5"
	bbSHA := "709d658dc5b6d6afcd46049c2f332ee3f515a67d"
	tests := []struct {
		name      string
		d         delivery
		secrets   *Secrets // testSecrets when nil
		maxBytes  int64
		finderErr error
		fail      map[string]bool

		want          served
		wantFinds     []string
		wantRefreshes []refreshCall
	}{
		{
			name:      "github branch push",
			d:         github("push", ghPush),
			want:      served{status: 200, res: result{Refreshed: []string{"app/default/frontend", "app/default/guestbook", "app/staging/api"}}},
			wantFinds: []string{"github.com/acme/gitops"},
			wantRefreshes: []refreshCall{
				{"app/default/frontend", ghReason}, {"app/default/guestbook", ghReason}, {"app/staging/api", ghReason},
			},
		},
		{
			name:      "github tag push",
			d:         github("push", fixture(t, "github-push-tag.json")),
			want:      served{status: 200, res: result{Refreshed: []string{"app/prod/exact", "app/prod/release"}}},
			wantFinds: []string{"github.com/acme/gitops"},
			wantRefreshes: []refreshCall{
				{"app/prod/exact", ghTagReason}, {"app/prod/release", ghTagReason},
			},
		},
		{
			name:      "gitlab push",
			d:         gitlab("Push Hook", fixture(t, "gitlab-push.json")),
			want:      served{status: 200, res: result{Refreshed: []string{"app/infra/staging"}}},
			wantFinds: []string{"gitlab.example.com/infra/platform-config"},
			wantRefreshes: []refreshCall{
				{"app/infra/staging", "gitlab webhook: push to refs/heads/staging at da1560886d4f094c3e6c9ef40349f7d38b5d27d7"},
			},
		},
		{
			name:      "gitlab tag push",
			d:         gitlab("Tag Push Hook", fixture(t, "gitlab-tag-push.json")),
			want:      served{status: 200, res: result{Refreshed: []string{"app/infra/releases"}}},
			wantFinds: []string{"gitlab.example.com/infra/platform-config"},
			wantRefreshes: []refreshCall{
				{"app/infra/releases", "gitlab webhook: push to refs/tags/v2.3.0 at 82b3d5ae55f7080f1e6022629cdb57bfae7cccc7"},
			},
		},
		{
			// HEAD matches the first branch (the default branch is unknown)
			// and is refreshed once although the deleted branch matches too.
			name:      "bitbucket cloud push of several refs",
			d:         bitbucket("repo:push", fixture(t, "bitbucket-push.json")),
			want:      served{status: 200, res: result{Refreshed: []string{"app/ops/experiment", "app/ops/payments", "app/ops/release"}}},
			wantFinds: []string{"bitbucket.org/acme-team/deploy-config"},
			wantRefreshes: []refreshCall{
				{"app/ops/experiment", "bitbucket webhook: refs/heads/feature/old-experiment deleted"},
				{"app/ops/payments", "bitbucket webhook: push to refs/heads/main at " + bbSHA},
				{"app/ops/release", "bitbucket webhook: push to refs/tags/v3.1.0 at " + bbSHA},
			},
		},
		{
			name:      "bitbucket server app found under both URL forms is refreshed once",
			d:         bitbucket("repo:refs_changed", fixture(t, "bitbucket-server-refs-changed.json")),
			want:      served{status: 200, res: result{Refreshed: []string{"app/platform/cluster-apps"}}},
			wantFinds: []string{"bitbucket.example.com:7999/plat/cluster-apps", "bitbucket.example.com/scm/plat/cluster-apps"},
			wantRefreshes: []refreshCall{
				{"app/platform/cluster-apps", "bitbucket-server webhook: push to refs/heads/release/2024.05 at 178864a7d521b6f5e720b386b2c2b0ef8563e0dc"},
			},
		},
		{
			name: "push nobody follows",
			d: github("push", []byte(`{"ref":"refs/heads/main","after":"`+ghSHA+`",`+
				`"repository":{"html_url":"https://github.com/acme/unknown","default_branch":"main"}}`)),
			want:      served{status: 200, res: result{Refreshed: []string{}}},
			wantFinds: []string{"github.com/acme/unknown"},
		},
		{
			name: "one refresh fails, the others go on",
			d:    github("push", ghPush),
			fail: map[string]bool{"app/default/guestbook": true},
			want: served{status: 200, res: result{
				Refreshed: []string{"app/default/frontend", "app/staging/api"},
				Failed:    []string{"app/default/guestbook"},
			}},
			wantFinds: []string{"github.com/acme/gitops"},
			wantRefreshes: []refreshCall{
				{"app/default/frontend", ghReason}, {"app/default/guestbook", ghReason}, {"app/staging/api", ghReason},
			},
		},
		{
			name: "github ping",
			d:    github("ping", fixture(t, "github-ping.json")),
			want: served{status: 200, res: result{Refreshed: []string{}}},
		},
		{
			name: "bitbucket server ping",
			d:    bitbucket("diagnostics:ping", []byte(`{"test":true}`)),
			want: served{status: 200, res: result{Refreshed: []string{}}},
		},
		{
			name: "event that is not a push",
			d:    github("pull_request", []byte(`{"action":"opened"}`)),
			want: served{status: 202, res: result{Refreshed: []string{},
				Ignored: `github event "pull_request": not a push event; only pushes refresh applications`}},
		},
		{
			name: "invalid signature",
			d:    github("push", ghPush).with(headerGitHubSignature, sign("wrong", ghPush)),
			want: served{status: 401, msg: "X-Hub-Signature-256 does not match the payload"},
		},
		{
			name: "missing signature",
			d:    bitbucket("repo:push", fixture(t, "bitbucket-push.json")).with(headerBitbucketSig, ""),
			want: served{status: 401, msg: "missing X-Hub-Signature header"},
		},
		{
			name: "wrong gitlab token",
			d:    gitlab("Push Hook", fixture(t, "gitlab-push.json")).with(headerGitLabToken, "guess"),
			want: served{status: 401, msg: "X-Gitlab-Token does not match"},
		},
		{
			name:    "secret not configured",
			d:       github("push", ghPush),
			secrets: &Secrets{GitLab: testSecrets.GitLab},
			want:    served{status: 401, msg: "webhook secret not configured for github"},
		},
		{
			name:    "unsigned ping without a secret",
			d:       github("ping", fixture(t, "github-ping.json")).with(headerGitHubSignature, ""),
			secrets: &Secrets{},
			want:    served{status: 401, msg: "webhook secret not configured for github"},
		},
		{
			name: "malformed JSON",
			d:    github("push", []byte(`{"ref": "refs/heads/main", "repository": `)),
			want: served{status: 400, msg: "malformed github push payload"},
		},
		{
			name: "no provider",
			d:    delivery{ghPush, nil},
			want: served{status: 400, msg: "not a known webhook: no X-GitHub-Event, X-Gitlab-Event or X-Event-Key header"},
		},
		{
			name:     "payload one byte over the limit",
			d:        github("push", ghPush),
			maxBytes: int64(len(ghPush)) - 1,
			want:     served{status: 413, msg: "payload exceeds " + strconv.Itoa(len(ghPush)-1) + " bytes"},
		},
		{
			name:          "payload at the limit",
			d:             github("push", ghPush),
			maxBytes:      int64(len(ghPush)),
			want:          served{status: 200, res: result{Refreshed: []string{"app/default/frontend", "app/default/guestbook", "app/staging/api"}}},
			wantFinds:     []string{"github.com/acme/gitops"},
			wantRefreshes: []refreshCall{{"app/default/frontend", ghReason}, {"app/default/guestbook", ghReason}, {"app/staging/api", ghReason}},
		},
		{
			name:      "finder fails",
			d:         github("push", ghPush),
			finderErr: errors.New("visibility store unreachable"),
			want:      served{status: 503, msg: "finding the applications of the repository failed"},
			wantFinds: []string{"github.com/acme/gitops"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secrets := testSecrets
			if tt.secrets != nil {
				secrets = *tt.secrets
			}
			f := &fakeFinder{apps: testApps(), err: tt.finderErr}
			r := &fakeRefresher{fail: tt.fail}
			h := NewHandler(Config{Secrets: secrets, MaxBytes: tt.maxBytes}, f, r, slog.New(slog.DiscardHandler))

			got := serve(t, h, tt.d.request(t))

			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(served{})); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantFinds, f.calls); diff != "" {
				t.Errorf("Finder calls (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRefreshes, r.calls); diff != "" {
				t.Errorf("Refresher calls (-want +got):\n%s", diff)
			}
		})
	}
}

// A chunked body has no Content-Length: the overflow is found while reading.
func TestHandleOversizeChunked(t *testing.T) {
	body := fixture(t, "github-push-branch.json")
	f, r := &fakeFinder{apps: testApps()}, &fakeRefresher{}
	h := NewHandler(Config{Secrets: testSecrets, MaxBytes: 512}, f, r, slog.New(slog.DiscardHandler))
	req := github("push", body).request(t)
	req.ContentLength = -1
	req.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), strings.NewReader(strings.Repeat(" ", 1<<20))))

	got := serve(t, h, req)

	if diff := cmp.Diff(served{status: 413, msg: "payload exceeds 512 bytes"}, got, cmp.AllowUnexported(served{})); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if len(f.calls)+len(r.calls) != 0 {
		t.Errorf("Finder calls %v, Refresher calls %v; want none", f.calls, r.calls)
	}
}

func TestHandleDefaultLimit(t *testing.T) {
	body := append(fixture(t, "github-push-branch.json"), bytes.Repeat([]byte(" "), DefaultMaxBytes)...)
	h := NewHandler(Config{Secrets: testSecrets}, &fakeFinder{}, &fakeRefresher{}, slog.New(slog.DiscardHandler))
	if got := serve(t, h, github("push", body).request(t)); got.status != http.StatusRequestEntityTooLarge {
		t.Errorf("status = %d, want 413", got.status)
	}
}

// Refreshes go on when the sender hangs up before they are done.
func TestHandleRefreshesOutliveTheRequest(t *testing.T) {
	d := github("push", fixture(t, "github-push-branch.json"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := &fakeRefresher{}
	h := NewHandler(Config{Secrets: testSecrets}, &fakeFinder{apps: testApps()}, r, slog.New(slog.DiscardHandler))

	serve(t, h, d.request(t).WithContext(ctx))

	if len(r.calls) == 0 {
		t.Fatal("no refresh")
	}
	for i, err := range r.ctxErrs {
		if err != nil {
			t.Errorf("refresh of %s ran on a done context: %v", r.calls[i].App, err)
		}
	}
}

// Logs carry neither a secret nor a signature, whatever the outcome.
func TestHandleLogsNoSecrets(t *testing.T) {
	ghPush := fixture(t, "github-push-branch.json")
	forged := sign("attacker-guess", ghPush)
	deliveries := []delivery{
		github("push", ghPush),
		github("push", ghPush).with(headerGitHubSignature, forged),
		gitlab("Push Hook", fixture(t, "gitlab-push.json")).with(headerGitLabToken, "token-guess"),
		gitlab("Push Hook", fixture(t, "gitlab-push.json")),
		bitbucket("repo:push", fixture(t, "bitbucket-push.json")),
		github("issues", []byte(`{}`)),
	}
	var buf bytes.Buffer
	f := &fakeFinder{apps: testApps()}
	r := &fakeRefresher{fail: map[string]bool{"app/default/guestbook": true}}
	h := NewHandler(Config{Secrets: testSecrets}, f, r, newTextLogger(&buf))
	for _, d := range deliveries {
		serve(t, h, d.request(t))
	}
	logs := buf.String()
	secrets := []string{
		testSecrets.GitHub, testSecrets.GitLab, testSecrets.Bitbucket, "token-guess",
		strings.TrimPrefix(forged, "sha256="), strings.TrimPrefix(sign(testSecrets.GitHub, ghPush), "sha256="),
	}
	for _, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("logs contain %q:\n%s", s, logs)
		}
	}
	for _, msg := range []string{msgHandled, msgRejected, msgIgnored, msgRefreshFailed} {
		if !strings.Contains(logs, `msg="`+msg+`"`) {
			t.Errorf("logs lack %q:\n%s", msg, logs)
		}
	}
}

func TestNewHandlerWarnsWithoutSecrets(t *testing.T) {
	var buf bytes.Buffer
	NewHandler(Config{}, &fakeFinder{}, &fakeRefresher{}, newTextLogger(&buf))
	if !strings.Contains(buf.String(), msgNoSecrets) {
		t.Errorf("no warning about missing secrets in %q", buf.String())
	}
}
