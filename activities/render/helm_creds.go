package render

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/windlass-cd/windlass/internal/repocred"
)

// CredentialLookup finds a chart repository's or registry's credential
// by URL at run time (repocred.Resolver); nil when there is none.
type CredentialLookup interface {
	Lookup(ctx context.Context, repoURL string) (*repocred.Credential, error)
}

var _ CredentialLookup = (*repocred.Resolver)(nil)

const msgInsecureRepo = "repository TLS verification is off"

// helmCredential looks repoURL's credential up; nil without a lookup or
// a match. It warns when the credential turns TLS checks off.
func (r *Renderer) helmCredential(ctx context.Context, repoURL string) (*repocred.Credential, error) {
	if r.creds == nil {
		return nil, nil
	}
	c, err := r.creds.Lookup(ctx, repoURL)
	if err != nil {
		return nil, fmt.Errorf("credential of %s: %w", repoURL, err)
	}
	if c != nil && c.Insecure && r.log != nil {
		r.log.Warn(msgInsecureRepo, "repo", c.URL)
	}
	return c, nil
}

// credTransports holds one transport per net timeout and credential
// transport settings, so that connections are reused between renders.
type credTransportKey struct {
	timeout time.Duration
	key     string
}

// helmCredTransport is the transport for c: the shared one when c sets
// no TLS or proxy settings.
func (r *Renderer) helmCredTransport(c *repocred.Credential) (http.RoundTripper, error) {
	base := helmTransport(r.netTimeout)
	if !c.HasTransport() {
		return base, nil
	}
	k := credTransportKey{r.netTimeout, c.TransportKey()}
	if t, ok := helmTransports.Load(k); ok {
		return t.(*http.Transport), nil
	}
	t, err := c.Transport(base)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrChartRepo, err)
	}
	got, _ := helmTransports.LoadOrStore(k, t)
	return got.(*http.Transport), nil
}

// sendsCredential reports whether c goes with a request to u: always to
// the repository's own host, elsewhere only with passCredentials (as
// helm's --pass-credentials).
func sendsCredential(c *repocred.Credential, repoURL, u string) bool {
	if c == nil {
		return false
	}
	if c.PassCredentials {
		return true
	}
	ru, err1 := url.Parse(repoURL)
	tu, err2 := url.Parse(u)
	return err1 == nil && err2 == nil && strings.EqualFold(ru.Host, tu.Host) && ru.Scheme == tu.Scheme
}

// registryCredential answers oras' credential callback: c for the
// registry of repoURL, nothing for other hosts.
func registryCredential(c *repocred.Credential, repoURL string) auth.CredentialFunc {
	host := ""
	if u, err := url.Parse(repoURL); err == nil {
		host = u.Host
	}
	return func(_ context.Context, hostport string) (auth.Credential, error) {
		if c == nil || (hostport != host && !c.PassCredentials) {
			return auth.EmptyCredential, nil
		}
		if c.BearerToken != "" {
			return auth.Credential{AccessToken: c.BearerToken}, nil
		}
		return auth.Credential{Username: c.Username, Password: c.Password}, nil
	}
}

// refusedHint says what to check when a repository refused a request
// (sent: whether the credential went with it).
func refusedHint(c *repocred.Credential, sent bool) string {
	switch {
	case c == nil:
		return "no credential is registered for it"
	case !sent:
		return "the credential of " + c.URL + " goes to other hosts only with passCredentials"
	}
	return "it refused the credential registered for " + c.URL
}

// staticCredential is a CredentialLookup of one credential.
type staticCredential struct{ c *repocred.Credential }

func (s staticCredential) Lookup(context.Context, string) (*repocred.Credential, error) {
	return s.c, nil
}

// CheckChartRepo tests a Helm repository with cred (nil: anonymous)
// before it is registered: an HTTP repository must serve its index. An
// OCI registry lists nothing without a chart name, so it is not tested.
func CheckChartRepo(ctx context.Context, repoURL string, cred *repocred.Credential, timeout time.Duration) error {
	if isOCIRepo(repoURL) {
		return nil
	}
	r := &Renderer{creds: staticCredential{cred}, netTimeout: timeout}
	_, err := r.fetchHelmIndex(ctx, repoURL)
	return err
}

// certError reports whether err is a server certificate that did not
// verify: retrying cannot fix it, a CA in the credential can.
func certError(err error) bool {
	var verr *tls.CertificateVerificationError
	var uerr x509.UnknownAuthorityError
	var herr x509.HostnameError
	return errors.As(err, &verr) || errors.As(err, &uerr) || errors.As(err, &herr)
}

// errRefused marks a repository that refused the credential sent (or its
// absence), or whose certificate did not verify.
var errRefused = errors.New("credential refused")

// credentialRefresher is a CredentialLookup whose cache can be reread
// (repocred.Resolver).
type credentialRefresher interface {
	Refresh(ctx context.Context) (changed bool, err error)
}

// retryRefused runs op, and once more when it was refused and the
// credential store has changed since the lookup's cache was filled: a
// credential added just before an app must not fail it for good.
func (r *Renderer) retryRefused(ctx context.Context, op func() error) error {
	err := op()
	if err == nil || !errors.Is(err, errRefused) {
		return err
	}
	f, ok := r.creds.(credentialRefresher)
	if !ok {
		return err
	}
	if changed, rerr := f.Refresh(ctx); rerr != nil || !changed {
		return err
	}
	return op()
}
