package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/labstack/echo/v5"
)

var testSecrets = Secrets{GitHub: "gh-s3cret", GitLab: "gl-t0ken", Bitbucket: "bb-s3cret"}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// delivery describes one webhook request.
type delivery struct {
	body    []byte
	headers map[string]string
}

func (d delivery) request(t *testing.T) *http.Request {
	t.Helper()
	r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, Path, bytes.NewReader(d.body))
	r.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	for k, v := range d.headers {
		r.Header.Set(k, v)
	}
	return r
}

func github(event string, body []byte) delivery {
	return delivery{body, map[string]string{
		headerGitHubEvent:     event,
		"X-GitHub-Delivery":   "72d3162e-cc78-11e3-81ab-4c9367dc0958",
		headerGitHubSignature: sign(testSecrets.GitHub, body),
	}}
}

func gitlab(event string, body []byte) delivery {
	return delivery{body, map[string]string{headerGitLabEvent: event, headerGitLabToken: testSecrets.GitLab}}
}

func bitbucket(event string, body []byte) delivery {
	return delivery{body, map[string]string{
		headerBitbucketEvent: event,
		"X-Request-UUID":     "4d2c7a3e-6b1f-4f0e-9a59-3b7f0e7c1d2a",
		headerBitbucketSig:   sign(testSecrets.Bitbucket, body),
	}}
}

// with returns d with header k set to v, or removed when v is empty.
func (d delivery) with(k, v string) delivery {
	h := map[string]string{}
	for hk, hv := range d.headers {
		h[hk] = hv
	}
	if v == "" {
		delete(h, k)
	} else {
		h[k] = v
	}
	return delivery{d.body, h}
}

var (
	githubURLs = []string{
		"https://github.com/Acme/GitOps", "https://github.com/Acme/GitOps.git",
		"git@github.com:Acme/GitOps.git", "git://github.com/Acme/GitOps.git",
	}
	gitlabURLs = []string{
		"https://gitlab.example.com/infra/platform-config", "https://gitlab.example.com/infra/platform-config.git",
		"git@gitlab.example.com:infra/platform-config.git",
	}
	bitbucketServerURLs = []string{
		"ssh://git@bitbucket.example.com:7999/plat/cluster-apps.git", "https://bitbucket.example.com/scm/plat/cluster-apps.git",
	}
)

func TestParse(t *testing.T) {
	ghPush := fixture(t, "github-push-branch.json")
	ghForm := []byte(url.Values{"payload": {string(ghPush)}}.Encode())
	ghWant := []Push{{
		Provider: "github", RepoURLs: githubURLs, Ref: "refs/heads/main",
		After: "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c", DefaultBranch: "main",
		Files: []string{"apps/guestbook/deployment.yaml"},
	}}
	bbURL := []string{"https://bitbucket.org/acme-team/deploy-config"}
	tests := []struct {
		name string
		d    delivery
		want []Push
	}{
		{"github branch push", github("push", ghPush), ghWant},
		{"github form-encoded push", github("push", ghForm).with(echo.HeaderContentType, echo.MIMEApplicationForm), ghWant},
		{"github tag push", github("push", fixture(t, "github-push-tag.json")), []Push{{
			Provider: "github", RepoURLs: githubURLs, Ref: "refs/tags/v1.4.2",
			After: "a3f5c4b0e2d94c1b8e7f6a5d4c3b2a1908f7e6d5", DefaultBranch: "main",
		}}},
		{"github ping", github("ping", fixture(t, "github-ping.json")), nil},
		{"gitlab push", gitlab("Push Hook", fixture(t, "gitlab-push.json")), []Push{{
			Provider: "gitlab", RepoURLs: gitlabURLs, Ref: "refs/heads/staging",
			After: "da1560886d4f094c3e6c9ef40349f7d38b5d27d7", DefaultBranch: "main",
			Files: []string{"ingress/values.yaml"},
		}}},
		{"gitlab tag push", gitlab("Tag Push Hook", fixture(t, "gitlab-tag-push.json")), []Push{{
			Provider: "gitlab", RepoURLs: gitlabURLs, Ref: "refs/tags/v2.3.0",
			After: "82b3d5ae55f7080f1e6022629cdb57bfae7cccc7", DefaultBranch: "main",
		}}},
		{"gitlab system hook push", gitlab("System Hook", fixture(t, "gitlab-push.json")), []Push{{
			Provider: "gitlab", RepoURLs: gitlabURLs, Ref: "refs/heads/staging",
			After: "da1560886d4f094c3e6c9ef40349f7d38b5d27d7", DefaultBranch: "main",
			Files: []string{"ingress/values.yaml"},
		}}},
		{"bitbucket cloud push with a branch, a new tag and a deleted branch", bitbucket("repo:push", fixture(t, "bitbucket-push.json")), []Push{
			{Provider: "bitbucket", RepoURLs: bbURL, Ref: "refs/heads/main", After: "709d658dc5b6d6afcd46049c2f332ee3f515a67d"},
			{Provider: "bitbucket", RepoURLs: bbURL, Ref: "refs/tags/v3.1.0", After: "709d658dc5b6d6afcd46049c2f332ee3f515a67d"},
			{Provider: "bitbucket", RepoURLs: bbURL, Ref: "refs/heads/feature/old-experiment"},
		}},
		{"bitbucket server refs changed", bitbucket("repo:refs_changed", fixture(t, "bitbucket-server-refs-changed.json")), []Push{{
			Provider: "bitbucket-server", RepoURLs: bitbucketServerURLs, Ref: "refs/heads/release/2024.05",
			After: "178864a7d521b6f5e720b386b2c2b0ef8563e0dc",
		}}},
		{"bitbucket server ping", bitbucket("diagnostics:ping", []byte(`{"test": true}`)), nil},
		{"bitbucket cloud push without changes", bitbucket("repo:push",
			[]byte(`{"push":{"changes":[]},"repository":{"links":{"html":{"href":"https://bitbucket.org/a/b"}}}}`)), nil},
		{"github deleted branch", github("push",
			[]byte(`{"ref":"refs/heads/gone","after":"0000000000000000000000000000000000000000","deleted":true,"repository":{"html_url":"https://github.com/a/b"}}`)),
			[]Push{{Provider: "github", RepoURLs: []string{"https://github.com/a/b"}, Ref: "refs/heads/gone"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.d.request(t), tt.d.body, testSecrets)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("pushes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	ghPush := fixture(t, "github-push-branch.json")
	glPush := fixture(t, "gitlab-push.json")
	bbPush := fixture(t, "bitbucket-push.json")
	tampered := bytes.Replace(ghPush, []byte("refs/heads/main"), []byte("refs/heads/evil"), 1)
	tests := []struct {
		name    string
		d       delivery
		secrets Secrets
		status  int
		detail  string
	}{
		{"github without a secret", github("push", ghPush), Secrets{GitLab: "x", Bitbucket: "y"},
			http.StatusUnauthorized, "webhook secret not configured for github"},
		{"github ping without a secret", github("ping", fixture(t, "github-ping.json")), Secrets{},
			http.StatusUnauthorized, "webhook secret not configured for github"},
		{"github missing signature", github("push", ghPush).with(headerGitHubSignature, ""), testSecrets,
			http.StatusUnauthorized, "missing X-Hub-Signature-256 header"},
		{"github signature by another secret", github("push", ghPush).with(headerGitHubSignature, sign("guess", ghPush)), testSecrets,
			http.StatusUnauthorized, "X-Hub-Signature-256 does not match the payload"},
		{"github tampered payload", delivery{tampered, github("push", ghPush).headers}, testSecrets,
			http.StatusUnauthorized, "X-Hub-Signature-256 does not match the payload"},
		{"github sha1 signature", github("push", ghPush).with(headerGitHubSignature, "sha1=2fd4e1c67a2d28fced849ee1bb76e7391b93eb12"), testSecrets,
			http.StatusUnauthorized, "X-Hub-Signature-256 is not a sha256 signature"},
		{"github signature not hex", github("push", ghPush).with(headerGitHubSignature, "sha256=zz"), testSecrets,
			http.StatusUnauthorized, "X-Hub-Signature-256 is not hex"},
		{"github truncated signature", github("push", ghPush).with(headerGitHubSignature, sign(testSecrets.GitHub, ghPush)[:21]), testSecrets,
			http.StatusUnauthorized, "X-Hub-Signature-256 does not match the payload"},
		{"github signed with the bitbucket header only", github("push", ghPush).with(headerGitHubSignature, "").
			with(headerBitbucketSig, sign(testSecrets.GitHub, ghPush)), testSecrets,
			http.StatusUnauthorized, "missing X-Hub-Signature-256 header"},

		{"gitlab without a secret", gitlab("Push Hook", glPush), Secrets{GitHub: "x"},
			http.StatusUnauthorized, "webhook secret not configured for gitlab"},
		{"gitlab missing token", gitlab("Push Hook", glPush).with(headerGitLabToken, ""), testSecrets,
			http.StatusUnauthorized, "missing X-Gitlab-Token header"},
		{"gitlab wrong token", gitlab("Push Hook", glPush).with(headerGitLabToken, "gl-t0ke"), testSecrets,
			http.StatusUnauthorized, "X-Gitlab-Token does not match"},

		{"bitbucket without a secret", bitbucket("repo:push", bbPush), Secrets{GitHub: "x", GitLab: "y"},
			http.StatusUnauthorized, "webhook secret not configured for bitbucket"},
		{"bitbucket missing signature", bitbucket("repo:push", bbPush).with(headerBitbucketSig, ""), testSecrets,
			http.StatusUnauthorized, "missing X-Hub-Signature header"},
		{"bitbucket signature by the github secret", bitbucket("repo:push", bbPush).with(headerBitbucketSig, sign(testSecrets.GitHub, bbPush)), testSecrets,
			http.StatusUnauthorized, "X-Hub-Signature does not match the payload"},
		{"bitbucket server ping unsigned", bitbucket("diagnostics:ping", nil).with(headerBitbucketSig, ""), testSecrets,
			http.StatusUnauthorized, "missing X-Hub-Signature header"},

		{"no provider header", delivery{ghPush, map[string]string{headerGitHubSignature: sign(testSecrets.GitHub, ghPush)}}, testSecrets,
			http.StatusBadRequest, "not a known webhook: no X-GitHub-Event, X-Gitlab-Event or X-Event-Key header"},
		{"github malformed JSON", github("push", []byte(`{"ref": "refs/heads/main", `)), testSecrets,
			http.StatusBadRequest, "malformed github push payload"},
		{"gitlab malformed JSON", gitlab("Push Hook", []byte(`<xml/>`)), testSecrets,
			http.StatusBadRequest, "malformed gitlab push payload"},
		{"bitbucket malformed JSON", bitbucket("repo:push", []byte(`{"push": []}`)), testSecrets,
			http.StatusBadRequest, "malformed bitbucket push payload"},
		{"bitbucket server malformed JSON", bitbucket("repo:refs_changed", []byte(`[`)), testSecrets,
			http.StatusBadRequest, "malformed bitbucket-server push payload"},
		{"github push without a ref", github("push", []byte(`{"repository":{"html_url":"https://github.com/a/b"}}`)), testSecrets,
			http.StatusBadRequest, "github push payload has no ref"},
		{"github push without a repository", github("push", []byte(`{"ref":"refs/heads/main"}`)), testSecrets,
			http.StatusBadRequest, "github push payload has no repository URL"},
		{"github null payload", github("push", []byte(`null`)), testSecrets,
			http.StatusBadRequest, "github push payload has no ref"},
		{"bitbucket push without a repository", bitbucket("repo:push", []byte(`{"push":{"changes":[]}}`)), testSecrets,
			http.StatusBadRequest, "bitbucket push payload has no repository URL"},
		{"github form without payload", github("push", []byte("other=1")).with(echo.HeaderContentType, echo.MIMEApplicationForm), testSecrets,
			http.StatusBadRequest, "form-encoded github push has no payload field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.d.request(t), tt.d.body, tt.secrets)
			if got != nil {
				t.Errorf("pushes = %v, want none", got)
			}
			var he *echo.HTTPError
			if !errors.As(err, &he) {
				t.Fatalf("error = %v, want an *echo.HTTPError", err)
			}
			if diff := cmp.Diff([]any{tt.status, tt.detail}, []any{he.Code, he.Message}); diff != "" {
				t.Errorf("status, detail (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseNotPush(t *testing.T) {
	tests := []struct {
		name string
		d    delivery
		msg  string
	}{
		{"github issues", github("issues", []byte(`{}`)), `github event "issues"`},
		{"github create", github("create", []byte(`{}`)), `github event "create"`},
		{"gitlab merge request", gitlab("Merge Request Hook", []byte(`{}`)), `gitlab event "Merge Request Hook"`},
		{"gitlab system hook for a new project", gitlab("System Hook", []byte(`{"event_name":"project_create"}`)), `gitlab event "System Hook: project_create"`},
		{"bitbucket pull request", bitbucket("pullrequest:created", []byte(`{}`)), `bitbucket event "pullrequest:created"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.d.request(t), tt.d.body, testSecrets)
			if got != nil || !errors.Is(err, ErrNotPush) {
				t.Fatalf("Parse = %v, %v; want ErrNotPush", got, err)
			}
			if !strings.HasPrefix(err.Error(), tt.msg) {
				t.Errorf("error %q does not start with %q", err, tt.msg)
			}
		})
	}
}

func TestParseNotPushIsVerifiedFirst(t *testing.T) {
	d := github("issues", []byte(`{}`)).with(headerGitHubSignature, "")
	_, err := Parse(d.request(t), d.body, testSecrets)
	if echo.StatusCode(err) != http.StatusUnauthorized {
		t.Fatalf("error = %v, want 401", err)
	}
}

func TestSecretsAreMasked(t *testing.T) {
	s := Secrets{GitHub: "gh-s3cret", Bitbucket: "bb-s3cret"}
	var buf bytes.Buffer
	logger := newTextLogger(&buf)
	logger.Info("config", "secrets", s)
	for _, out := range []string{s.String(), buf.String()} {
		if strings.Contains(out, "s3cret") {
			t.Errorf("secret leaked: %s", out)
		}
	}
	if want := "github=set gitlab=unset bitbucket=set"; s.String() != want {
		t.Errorf("String() = %q, want %q", s.String(), want)
	}
}
