package ghapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// DefaultRefreshBefore is how long before its expiry a token is
// replaced: a fetch that starts with it has that long to finish.
const DefaultRefreshBefore = 5 * time.Minute

// maxBody bounds what is read of a token response.
const maxBody = 1 << 20

// Tokens mints and caches installation tokens. It is safe for
// concurrent use; one per process shares its tokens between callers.
type Tokens struct {
	client *http.Client
	now    func() time.Time
	before time.Duration

	mu      sync.Mutex
	entries map[cacheKey]*entry
}

type cacheKey struct {
	api               string
	app, installation int64
	key               string // keyDigest: a new key gets a new token
}

// entry is one token; its lock makes concurrent refreshes one request.
type entry struct {
	mu      sync.Mutex
	token   string
	expires time.Time
}

// Option configures NewTokens.
type Option func(*Tokens)

// WithHTTPClient sets the default client of the token requests
// (default: a 30 s timeout).
func WithHTTPClient(c *http.Client) Option { return func(t *Tokens) { t.client = c } }

// WithClock sets the clock that signs JWTs and ages tokens.
func WithClock(now func() time.Time) Option { return func(t *Tokens) { t.now = now } }

// WithRefreshBefore sets how long before expiry a token is replaced
// (default DefaultRefreshBefore).
func WithRefreshBefore(d time.Duration) Option {
	return func(t *Tokens) {
		if d >= 0 {
			t.before = d
		}
	}
}

// NewTokens returns an empty token cache.
func NewTokens(opts ...Option) *Tokens {
	t := &Tokens{client: &http.Client{Timeout: 30 * time.Second}, now: time.Now, before: DefaultRefreshBefore,
		entries: map[cacheKey]*entry{}}
	for _, o := range opts {
		o(t)
	}
	return t
}

// Token returns a's installation token, from the cache while it has
// more than the refresh margin left, else a new one. client, when not
// nil, carries the request (a repository's CA or proxy).
func (t *Tokens) Token(ctx context.Context, a App, client *http.Client) (string, error) {
	api, err := API(a.EnterpriseBaseURL)
	if err != nil {
		return "", fmt.Errorf("%s: %w: %w", a, ErrRefused, err)
	}
	e := t.entry(keyOf(api, a))
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.token != "" && t.now().Before(e.expires.Add(-t.before)) {
		return e.token, nil
	}
	if client == nil {
		client = t.client
	}
	tok, exp, err := t.exchange(ctx, client, api, a)
	if err != nil {
		return "", err
	}
	e.token, e.expires = tok, exp
	return tok, nil
}

// Forget drops a's cached token, for a caller whose token a server
// refused, and reports whether there was one: the next Token asks for a
// new one.
func (t *Tokens) Forget(a App) bool {
	api, err := API(a.EnterpriseBaseURL)
	if err != nil {
		return false
	}
	e := t.entry(keyOf(api, a))
	e.mu.Lock()
	defer e.mu.Unlock()
	had := e.token != ""
	e.token, e.expires = "", time.Time{}
	return had
}

func keyOf(api string, a App) cacheKey {
	return cacheKey{api: api, app: a.AppID, installation: a.InstallationID, key: keyDigest(a.PrivateKey)}
}

func (t *Tokens) entry(k cacheKey) *entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.entries[k]
	if !ok {
		e = &entry{}
		t.entries[k] = e
	}
	return e
}

// tokenResponse is the part of GitHub's answer that is used.
type tokenResponse struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
	Message   string    `json:"message"`
}

// exchange signs a JWT and trades it for an installation token.
func (t *Tokens) exchange(ctx context.Context, client *http.Client, api string, a App) (string, time.Time, error) {
	key, err := ParseKey(a.PrivateKey)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%s: %w", a, err)
	}
	jwt, err := SignJWT(key, a.AppID, t.now())
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%s: %w", a, err)
	}
	u := api + "/app/installations/" + strconv.FormatInt(a.InstallationID, 10) + "/access_tokens"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%s: %w", a, err)
	}
	req.Header.Set("Authorization", "Bearer "+jwt)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	resp, err := client.Do(req)
	if err != nil {
		// Retryable: the API may come back.
		return "", time.Time{}, fmt.Errorf("%s: request a token from %s: %w", a, api, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%s: read the token from %s: %w", a, api, err)
	}
	var r tokenResponse
	jsonErr := json.Unmarshal(body, &r)
	why := ""
	if r.Message != "" {
		why = " (" + truncate(r.Message, 200) + ")"
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return "", time.Time{}, fmt.Errorf("%s at %s: %w: the API answered %d%s: check that the app ID is right and its private key is current, not expired or revoked",
			a, api, ErrRefused, resp.StatusCode, why)
	case resp.StatusCode == http.StatusNotFound:
		return "", time.Time{}, fmt.Errorf("%s at %s: %w: the API answered 404%s: check the installation ID, and that the app is installed on the repository's owner",
			a, api, ErrInstallationNotFound, why)
	case resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK:
		return "", time.Time{}, fmt.Errorf("%s at %s: token request answered %d%s", a, api, resp.StatusCode, why)
	case jsonErr != nil:
		return "", time.Time{}, fmt.Errorf("%s at %s: unreadable token response: %w", a, api, jsonErr)
	case r.Token == "":
		return "", time.Time{}, fmt.Errorf("%s at %s: the token response holds no token", a, api)
	}
	exp := r.ExpiresAt
	if exp.IsZero() {
		// GitHub's tokens last an hour; without a date, assume the least.
		exp = t.now().Add(t.before)
	}
	return r.Token, exp, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Refused reports whether err is the API refusing the credential, a
// missing installation or an unusable key: a new request cannot help.
func Refused(err error) bool {
	return errors.Is(err, ErrRefused) || errors.Is(err, ErrInstallationNotFound) || errors.Is(err, ErrInvalidKey)
}
