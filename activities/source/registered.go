package source

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/windlass-cd/windlass/internal/ghapp"
	"github.com/windlass-cd/windlass/internal/repocred"
	"github.com/windlass-cd/windlass/internal/settings"
)

// RegisteredAuth resolves Git credentials at run time: registered
// repositories and credential templates (repocred), and the
// file-configured credentials; the longest URL prefix wins.
type RegisteredAuth struct {
	Repos    repocred.Lister
	Fallback Credentials
	// KnownHostsDir holds the known_hosts files written for registered
	// SSH repositories.
	KnownHostsDir string
	// GitHubApps mints the tokens of GitHub App credentials (nil: a
	// cache of its own). One per process shares them.
	GitHubApps *ghapp.Tokens

	once     sync.Once
	resolver *repocred.Resolver
	err      error
}

var _ TransportResolver = (*RegisteredAuth)(nil)

func (a *RegisteredAuth) init() error {
	a.once.Do(func() {
		a.resolver, a.err = repocred.NewResolver(a.Repos, 0)
		if a.GitHubApps == nil {
			a.GitHubApps = ghapp.NewTokens()
		}
	})
	return a.err
}

// lookup finds repoURL's credential; a submodule without one of its own
// takes its parent's on the same host.
func (a *RegisteredAuth) lookup(ctx context.Context, repoURL string) (*repocred.Credential, error) {
	if err := a.init(); err != nil {
		return nil, err
	}
	c, err := a.resolver.Lookup(ctx, repoURL)
	if c == nil && err == nil {
		if p := parentRepo(ctx, repoURL); p != "" {
			return a.resolver.Lookup(ctx, p)
		}
	}
	return c, err
}

// Auth implements the source activities' credential lookup.
func (a *RegisteredAuth) Auth(ctx context.Context, repoURL string) (transport.AuthMethod, error) {
	m, err := a.lookup(ctx, repoURL)
	if err != nil {
		return nil, err
	}
	creds := Credentials{Repos: append([]RepoCredential(nil), a.Fallback.Repos...)}
	if m != nil {
		c := registeredCredential(m.Repository)
		if !strings.HasPrefix(repoURL, c.URLPrefix) {
			c.URLPrefix = repoURL // the parent's, for a submodule
		}
		if m.SSHKnownHosts != "" {
			f, err := knownHostsFile(a.KnownHostsDir, m.SSHKnownHosts)
			if err != nil {
				return nil, err
			}
			c.SSHKnownHostsFile = f
		}
		creds.Repos = append(creds.Repos, c)
		if app := m.GitHubApp(); app != nil && creds.match(repoURL) == &creds.Repos[len(creds.Repos)-1] {
			return a.gitHubAppAuth(ctx, repoURL, m, *app)
		}
	}
	return creds.Auth(ctx, repoURL)
}

// gitHubAppUser is the user name GitHub takes with an installation token.
const gitHubAppUser = "x-access-token"

// gitHubAppAuth is basic auth with an installation token of app, asked
// for through the repository's CA and proxy.
func (a *RegisteredAuth) gitHubAppAuth(ctx context.Context, repoURL string, m *repocred.Credential, app ghapp.App) (transport.AuthMethod, error) {
	var client *http.Client
	if m.HasTransport() {
		t, err := m.Transport(http.DefaultTransport.(*http.Transport))
		if err != nil {
			return nil, err
		}
		client = &http.Client{Transport: t, Timeout: 30 * time.Second}
	}
	tok, err := a.GitHubApps.Token(ctx, app, client)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", redactURL(repoURL), err)
	}
	return &githttp.BasicAuth{Username: gitHubAppUser, Password: tok}, nil
}

// Transport implements TransportResolver: the TLS and proxy settings of
// the registered repository or template that matches repoURL.
func (a *RegisteredAuth) Transport(ctx context.Context, repoURL string) (TransportOptions, error) {
	m, err := a.lookup(ctx, repoURL)
	if err != nil || m == nil {
		return TransportOptions{}, err
	}
	o := TransportOptions{CABundle: []byte(m.CAData), InsecureSkipTLS: m.Insecure}
	if m.TLSClientCertData != "" {
		o.ClientCert, o.ClientKey = []byte(m.TLSClientCertData), []byte(m.TLSClientCertKey)
	}
	if ep, err := transport.NewEndpoint(repoURL); err == nil {
		o.Proxy = m.ProxyFor(ep.Host)
	}
	return o, nil
}

var _ OCICredentials = (*RegisteredAuth)(nil)

// OCICredential implements OCICredentials: the registered credential of
// an oci:// repository, a bearer token as the registry's access token.
func (a *RegisteredAuth) OCICredential(ctx context.Context, repoURL string) (auth.Credential, error) {
	m, err := a.lookup(ctx, repoURL)
	switch {
	case err != nil:
		return auth.EmptyCredential, err
	case m == nil:
		return auth.EmptyCredential, nil
	case m.BearerToken != "":
		return auth.Credential{AccessToken: m.BearerToken}, nil
	}
	return auth.Credential{Username: m.Username, Password: m.Password}, nil
}

// registeredCredential is r's credential, with its secrets held in
// memory; r.URL is the prefix it serves.
func registeredCredential(r settings.Repository) RepoCredential {
	c := RepoCredential{URLPrefix: r.URL, Username: r.Username, Bearer: r.BearerToken != "",
		InsecureIgnoreHostKey: r.InsecureIgnoreHostKey}
	secret := r.Password
	if r.BearerToken != "" {
		secret = r.BearerToken
	}
	return c.WithSecrets(secret, []byte(r.SSHPrivateKey))
}

const msgInsecureRepo = "repository TLS verification is off"

// TransportOptions are a repository's HTTPS settings: a CA bundle added
// to the system roots, a client certificate, insecure TLS, and a proxy.
type TransportOptions struct {
	CABundle        []byte
	ClientCert      []byte
	ClientKey       []byte
	InsecureSkipTLS bool
	Proxy           string
}

// httpTransport is a clone of base with o's TLS and proxy settings, or
// base itself when o sets none.
func (o TransportOptions) httpTransport(base *http.Transport) (*http.Transport, error) {
	c := &repocred.Credential{Repository: settings.Repository{URL: "the repository", CAData: string(o.CABundle),
		TLSClientCertData: string(o.ClientCert), TLSClientCertKey: string(o.ClientKey), Insecure: o.InsecureSkipTLS, Proxy: o.Proxy}}
	return c.Transport(base)
}

// TransportResolver is what a CredentialResolver may also do: find a
// repository's HTTPS settings.
type TransportResolver interface {
	Transport(ctx context.Context, repoURL string) (TransportOptions, error)
}

// transportOptions asks a.creds for repoURL's HTTPS settings, when it
// knows any.
func (a *Activities) transportOptions(ctx context.Context, repoURL string) (TransportOptions, error) {
	tr, ok := a.creds.(TransportResolver)
	if !ok {
		return TransportOptions{}, nil
	}
	o, err := tr.Transport(ctx, repoURL)
	if err != nil {
		return o, fmt.Errorf("transport settings of %s: %w", redactURL(repoURL), err)
	}
	if o.InsecureSkipTLS {
		a.log.Warn(msgInsecureRepo, "repo", redactURL(repoURL))
	}
	return o, nil
}

// Refresh rereads the registered credentials now (see
// repocred.Resolver.Refresh).
func (a *RegisteredAuth) Refresh(ctx context.Context) (bool, error) {
	if err := a.init(); err != nil {
		return false, err
	}
	return a.resolver.Refresh(ctx)
}

// ForgetToken drops the cached GitHub App installation token of
// repoURL's credential and reports whether there was one: a server that
// refused it may have revoked it, and a new one may pass.
func (a *RegisteredAuth) ForgetToken(ctx context.Context, repoURL string) bool {
	m, err := a.lookup(ctx, repoURL)
	if err != nil || m == nil || m.GitHubApp() == nil {
		return false
	}
	return a.GitHubApps.Forget(*m.GitHubApp())
}

// tokenForgetter is a CredentialResolver whose cached tokens can be
// dropped.
type tokenForgetter interface {
	ForgetToken(ctx context.Context, repoURL string) bool
}

// refresher is a CredentialResolver whose cache can be reread.
type refresher interface {
	Refresh(ctx context.Context) (changed bool, err error)
}

// retryRefused runs op, and once more when the server refused repoURL's
// credential (or its certificate did not verify) and either the stored
// credentials changed since they were cached, or the refused credential
// was a cached GitHub App token: a credential registered just before an
// app, or a revoked token, must not fail it for good.
func (a *Activities) retryRefused(ctx context.Context, repoURL string, op func() error) error {
	err := op()
	if err == nil || (!errors.Is(err, ErrAuthFailed) && !errors.Is(err, ErrTLS) && !ghapp.Refused(err)) {
		return err
	}
	f, ok := a.creds.(refresher)
	if !ok {
		return err
	}
	changed, rerr := f.Refresh(ctx)
	if t, ok := a.creds.(tokenForgetter); ok && errors.Is(err, ErrAuthFailed) && t.ForgetToken(ctx, repoURL) {
		changed = true
	}
	if rerr != nil || !changed {
		return err
	}
	return op()
}
