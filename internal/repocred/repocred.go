package repocred

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/windlass-cd/windlass/internal/settings"
)

// Lister reads the registered repositories and credential templates
// with their secrets (settings.Store).
type Lister interface {
	Repos(ctx context.Context) ([]settings.Repository, error)
	RepoCreds(ctx context.Context) ([]settings.Repository, error)
}

var _ Lister = (*settings.Store)(nil)

// DefaultTTL is how long a Resolver reuses what it read: a new or changed
// credential is used after at most this long.
const DefaultTTL = 10 * time.Second

// Resolver looks credentials up by repository URL. It is safe for
// concurrent use.
type Resolver struct {
	store Lister
	ttl   time.Duration

	mu     sync.Mutex
	repos  []settings.Repository
	tmpls  []settings.Repository
	readAt time.Time
}

// NewResolver returns a resolver over store that rereads it every ttl
// (0: DefaultTTL).
func NewResolver(store Lister, ttl time.Duration) (*Resolver, error) {
	if store == nil {
		return nil, errors.New("repocred: a store is required")
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Resolver{store: store, ttl: ttl}, nil
}

// Credential is the credential found for a repository URL.
type Credential struct {
	settings.Repository
	// Template is set when a credential template matched.
	Template bool
}

// Lookup returns the credential for repoURL, or nil when none matches
// (anonymous access).
func (r *Resolver) Lookup(ctx context.Context, repoURL string) (*Credential, error) {
	repos, tmpls, err := r.read(ctx)
	if err != nil {
		return nil, err
	}
	return Match(repos, tmpls, repoURL), nil
}

func (r *Resolver) read(ctx context.Context) (repos, tmpls []settings.Repository, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.repos != nil && time.Since(r.readAt) < r.ttl {
		return r.repos, r.tmpls, nil
	}
	if repos, err = r.store.Repos(ctx); err == nil {
		tmpls, err = r.store.RepoCreds(ctx)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("repository credentials unavailable: %w", err)
	}
	r.repos, r.tmpls, r.readAt = repos, tmpls, time.Now()
	return repos, tmpls, nil
}

// Match picks repoURL's credential: the registered repository with the
// longest matching URL, else the template with the longest matching
// prefix, else nil.
func Match(repos, tmpls []settings.Repository, repoURL string) *Credential {
	if r, ok := longest(repos, repoURL, true); ok {
		return &Credential{Repository: r}
	}
	if t, ok := longest(tmpls, repoURL, false); ok {
		return &Credential{Repository: t, Template: true}
	}
	return nil
}

func longest(list []settings.Repository, repoURL string, canonical bool) (settings.Repository, bool) {
	var best settings.Repository
	found := false
	for _, r := range list {
		p := r.URL
		if canonical {
			p = settings.CanonicalRepoURL(p)
		}
		if strings.HasPrefix(repoURL, p) && (!found || len(p) > len(best.URL)) {
			best, found = r, true
			best.URL = p
		}
	}
	return best, found
}

// Secret is the password or token to send, "" when none.
func (c *Credential) Secret() string {
	if c == nil {
		return ""
	}
	if c.BearerToken != "" {
		return c.BearerToken
	}
	return c.Password
}

// Authorize sets req's Authorization header: bearer or basic. A nil
// credential or one without a secret sets nothing.
func (c *Credential) Authorize(req *http.Request) {
	switch {
	case c == nil:
	case c.BearerToken != "":
		req.Header.Set("Authorization", "Bearer "+c.BearerToken)
	case c.Username != "" || c.Password != "":
		req.SetBasicAuth(c.Username, c.Password)
	}
}

// HasTransport reports whether the credential changes the transport:
// TLS settings or a proxy.
func (c *Credential) HasTransport() bool {
	return c != nil && (c.TLSClientCertData != "" || c.CAData != "" || c.Insecure || c.Proxy != "")
}

// TransportKey identifies the transport settings, for reusing transports
// (and their connections) between lookups; "" when there are none. It
// is a digest and reveals no key.
func (c *Credential) TransportKey() string {
	if !c.HasTransport() {
		return ""
	}
	h := sha256.New()
	for _, s := range []string{c.TLSClientCertData, c.TLSClientCertKey, c.CAData, fmt.Sprint(c.Insecure), c.Proxy, c.NoProxy} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TLSConfig is the TLS configuration of the credential: its client
// certificate, its CA added to the system roots, and Insecure. nil when
// it sets none.
func (c *Credential) TLSConfig() (*tls.Config, error) {
	if c == nil || (c.TLSClientCertData == "" && c.CAData == "" && !c.Insecure) {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.TLSClientCertData != "" {
		cert, err := tls.X509KeyPair([]byte(c.TLSClientCertData), []byte(c.TLSClientCertKey))
		if err != nil {
			// The parser's message names no key material.
			return nil, fmt.Errorf("client certificate for %s: %w", c.URL, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if c.CAData != "" {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM([]byte(c.CAData)) {
			return nil, fmt.Errorf("CA of %s: no PEM certificate", c.URL)
		}
		cfg.RootCAs = pool
	}
	cfg.InsecureSkipVerify = c.Insecure //nolint:gosec // opt-in per repository, warned about
	return cfg, nil
}

// Transport returns a clone of base with the credential's TLS and proxy
// settings, or base itself when it has none.
func (c *Credential) Transport(base *http.Transport) (*http.Transport, error) {
	if !c.HasTransport() {
		return base, nil
	}
	t := base.Clone()
	cfg, err := c.TLSConfig()
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		t.TLSClientConfig = cfg
	}
	if c.Proxy != "" {
		p, err := url.Parse(c.Proxy)
		if err != nil {
			return nil, fmt.Errorf("proxy of %s: %w", c.URL, err)
		}
		noProxy := c.NoProxy
		t.Proxy = func(req *http.Request) (*url.URL, error) {
			if Bypass(noProxy, req.URL.Hostname()) {
				return nil, nil
			}
			return p, nil
		}
	}
	return t, nil
}

// ProxyFor is the proxy URL for host, "" when there is none or host is in
// NoProxy.
func (c *Credential) ProxyFor(host string) string {
	if c == nil || c.Proxy == "" || Bypass(c.NoProxy, host) {
		return ""
	}
	return c.Proxy
}

// Bypass reports whether host is listed in noProxy: comma-separated host
// names, domains (".example.com" or "example.com" also match their
// subdomains), IPs and CIDRs, or "*" for all.
func Bypass(noProxy, host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	ip := net.ParseIP(host)
	for _, e := range strings.Split(noProxy, ",") {
		e = strings.ToLower(strings.TrimSpace(e))
		if h, _, err := net.SplitHostPort(e); err == nil {
			e = h
		}
		switch {
		case e == "":
		case e == "*":
			return true
		case strings.Contains(e, "/"):
			if _, n, err := net.ParseCIDR(e); err == nil && ip != nil && n.Contains(ip) {
				return true
			}
		case host == strings.TrimPrefix(e, "."), strings.HasSuffix(host, "."+strings.TrimPrefix(e, ".")):
			return true
		}
	}
	return false
}

// Repos lists the registered repositories from the resolver's cache,
// for checks that run often (the project scope of each pass).
func (r *Resolver) Repos(ctx context.Context) ([]settings.Repository, error) {
	repos, _, err := r.read(ctx)
	return repos, err
}

// Refresh rereads the store now and reports whether what it holds
// changed: a caller whose credential was refused retries only then. A
// refusal is rare and fails for good, so it rereads every time: a
// credential stored a moment before its first use must be found.
func (r *Resolver) Refresh(ctx context.Context) (changed bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	repos, err := r.store.Repos(ctx)
	var tmpls []settings.Repository
	if err == nil {
		tmpls, err = r.store.RepoCreds(ctx)
	}
	if err != nil {
		return false, fmt.Errorf("repository credentials unavailable: %w", err)
	}
	changed = !slices.EqualFunc(repos, r.repos, equalRepo) || !slices.EqualFunc(tmpls, r.tmpls, equalRepo)
	r.repos, r.tmpls, r.readAt = repos, tmpls, time.Now()
	return changed, nil
}

func equalRepo(a, b settings.Repository) bool { return a == b }
