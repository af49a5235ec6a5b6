package testbed

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// GitHubApps answers GitHub's installation token endpoint on loopback,
// as GitHub documents it: POST {api}/app/installations/{id}/access_tokens
// with an RS256 app JWT (iss the app ID, iat in the past, exp at most 10
// minutes ahead) answers 201 with a token and its expires_at. A JWT
// that does not verify against the app's public key, or has expired,
// gets 401; an installation the app does not have gets 404. The
// tokens it issues are what its Git servers accept (TokenValid).
type GitHubApps struct {
	srv  *httptest.Server
	next http.Handler
	// now is the server's clock; tests share it with the client.
	now func() time.Time
	ttl time.Duration

	mu            sync.Mutex
	apps          map[int64]*rsa.PublicKey
	installations map[int64]int64 // installation -> app
	issued        map[string]issuedToken
	exchanges     int
}

type issuedToken struct {
	installation int64
	expires      time.Time
}

// GitHubAppsOptions configures StartGitHubApps.
type GitHubAppsOptions struct {
	// Now is the clock (default time.Now).
	Now func() time.Time
	// TokenTTL is how long a token lasts (default an hour, as GitHub's).
	TokenTTL time.Duration
	// Next, when set, serves the other requests that carry a live
	// installation token ("Authorization: Bearer <token>"); others get
	// 401.
	Next http.Handler
}

// StartGitHubApps starts the server on 127.0.0.1 until Close.
func StartGitHubApps(o GitHubAppsOptions) *GitHubApps {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.TokenTTL <= 0 {
		o.TokenTTL = time.Hour
	}
	g := &GitHubApps{now: o.Now, ttl: o.TokenTTL, next: o.Next, apps: map[int64]*rsa.PublicKey{},
		installations: map[int64]int64{}, issued: map[string]issuedToken{}}
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	return g
}

// EnterpriseBaseURL is the server as a GitHub Enterprise API base.
func (g *GitHubApps) EnterpriseBaseURL() string { return g.srv.URL + "/api/v3" }

// Close stops the server.
func (g *GitHubApps) Close() { g.srv.Close() }

// NewApp registers an app with a new key and one installation, and
// returns the key in PEM (PKCS #1, as GitHub hands it out).
func (g *GitHubApps) NewApp(appID, installationID int64) (string, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", fmt.Errorf("generate app key: %w", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.apps[appID] = &key.PublicKey
	g.installations[installationID] = appID
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})), nil
}

// RevokeKey deletes the app's key, as its owner does in GitHub's
// settings: JWTs signed with it get 401 from then on.
func (g *GitHubApps) RevokeKey(appID int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.apps[appID] = nil
}

// RevokeTokens revokes every token issued so far, as an installation's
// owner may (or GitHub, on suspending the app for a while).
func (g *GitHubApps) RevokeTokens() {
	g.mu.Lock()
	defer g.mu.Unlock()
	clear(g.issued)
}

// TokenValid reports whether token was issued here and has not expired.
func (g *GitHubApps) TokenValid(token string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	t, ok := g.issued[token]
	return ok && g.now().Before(t.expires)
}

// Issued lists the tokens issued so far, for scans that they leak
// nowhere.
func (g *GitHubApps) Issued() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]string, 0, len(g.issued))
	for t := range g.issued {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// GitServer serves the repositories under root to this server's live
// installation tokens alone, as GitHub does: basic auth as
// x-access-token.
func (g *GitHubApps) GitServer(root string, opts ...GitServerOptions) (*GitServer, error) {
	var o GitServerOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	o.Authorize = func(user, pass string) bool { return user == "x-access-token" && g.TokenValid(pass) }
	return StartGitServer(root, o)
}

// Exchanges counts the tokens issued.
func (g *GitHubApps) Exchanges() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.exchanges
}

// maxJWTLife is GitHub's bound on a JWT's exp.
const maxJWTLife = 10 * time.Minute

func (g *GitHubApps) serve(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/v3/app/installations/")
	id, ok2 := strings.CutSuffix(rest, "/access_tokens")
	inst, err := strconv.ParseInt(id, 10, 64)
	if !ok || !ok2 || err != nil || r.Method != http.MethodPost {
		g.serveNext(w, r)
		return
	}
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		ghError(w, http.StatusUnauthorized, "A JSON web token could not be decoded")
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	var appID int64
	rc := &jwt.RegisteredClaims{}
	_, err = jwt.ParseWithClaims(raw, rc, func(t *jwt.Token) (any, error) {
		iss, err := t.Claims.GetIssuer()
		if err != nil {
			return nil, err
		}
		if appID, err = strconv.ParseInt(iss, 10, 64); err != nil {
			return nil, errors.New("iss is not an app ID")
		}
		key := g.apps[appID]
		if key == nil {
			return nil, errors.New("no key")
		}
		return key, nil
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithTimeFunc(func() time.Time { return now }),
		jwt.WithIssuedAt(), jwt.WithExpirationRequired(), jwt.WithLeeway(0))
	if err != nil {
		ghError(w, http.StatusUnauthorized, "A JSON web token could not be decoded")
		return
	}
	if rc.ExpiresAt.Sub(now) > maxJWTLife {
		ghError(w, http.StatusUnauthorized, "'Expiration time' claim ('exp') is too far in the future")
		return
	}
	if g.installations[inst] != appID {
		ghError(w, http.StatusNotFound, "Not Found")
		return
	}
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	tok := "ghs_" + hex.EncodeToString(b)
	exp := now.Add(g.ttl).UTC().Truncate(time.Second)
	g.issued[tok] = issuedToken{installation: inst, expires: exp}
	g.exchanges++
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]any{"token": tok, "expires_at": exp.Format(time.RFC3339),
		"permissions": map[string]string{"contents": "read", "metadata": "read"}, "repository_selection": "all"})
}

// serveNext passes a request with a live token on to Next.
func (g *GitHubApps) serveNext(w http.ResponseWriter, r *http.Request) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case g.next == nil:
		ghError(w, http.StatusNotFound, "Not Found")
	case !ok || !g.TokenValid(tok):
		ghError(w, http.StatusUnauthorized, "Bad credentials")
	default:
		g.next.ServeHTTP(w, r)
	}
}

func ghError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest"})
}

// GitHubAppRepo is a GitHub App on a loopback token endpoint and a
// repository that only its installation tokens may read.
type GitHubAppRepo struct {
	API *GitHubApps
	// Key is the app's private key (PEM).
	Key string
	// URL is the repository on a Git server that takes only the app's
	// live tokens; Work pushes to it past that check.
	URL  string
	Git  *GitServer
	Work *WorkRepo
}

// StartGitHubAppRepo installs app appID as installationID on a new
// token endpoint, creates repo with files committed, and serves it to
// the app's tokens alone. Everything stops when t ends.
func StartGitHubAppRepo(t testing.TB, o GitHubAppsOptions, appID, installationID int64, repo string, files map[string]string) *GitHubAppRepo {
	t.Helper()
	r := &GitHubAppRepo{API: StartGitHubApps(o)}
	t.Cleanup(r.API.Close)
	var err error
	if r.Key, err = r.API.NewApp(appID, installationID); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	open, err := StartGitServer(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = open.Close() })
	pushURL, err := open.CreateRepo(repo)
	if err != nil {
		t.Fatal(err)
	}
	if r.Work, err = NewWorkRepo(context.Background(), t.TempDir(), pushURL, nil); err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		if err := r.Work.WriteFile(p, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Work.CommitAndPush(context.Background(), "first"); err != nil {
		t.Fatal(err)
	}
	if r.Git, err = r.API.GitServer(root); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Git.Close() })
	r.URL = r.Git.URL(repo)
	return r
}
