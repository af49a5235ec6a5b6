package source

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/windlass-cd/windlass/internal/failure"
)

// Errors that retrying cannot fix; their types travel to the workflow. An
// unreachable server is a plain (retryable) error.
var (
	ErrRepoNotFound     = failure.Permanent("RepositoryNotFound", "repository not found")
	ErrAuthFailed       = failure.Permanent("AuthenticationFailed", "authentication failed")
	ErrRevisionNotFound = failure.Permanent("RevisionNotFound", "revision not found")
	// ErrAmbiguousRevision is an abbreviated SHA that more than one commit
	// starts with.
	ErrAmbiguousRevision = failure.Permanent("AmbiguousRevision", "ambiguous revision")
	// ErrHostKeyMismatch is an SSH server whose host key is not in the
	// configured known_hosts (unknown, changed or revoked).
	ErrHostKeyMismatch = failure.Permanent("HostKeyMismatch", "ssh host key is not trusted")
	// ErrTransportNotAllowed is a URL of a transport other than
	// AllowedTransports.
	ErrTransportNotAllowed = failure.Permanent("TransportNotAllowed", "transport not allowed")
	// ErrTLS is an HTTPS server whose certificate did not verify, or that
	// refused our client certificate: the repository's caData or client
	// certificate must change.
	ErrTLS = failure.Permanent("TLSFailed", "TLS certificate check failed")
)

// classify maps go-git transport errors onto our sentinels. The URL is
// redacted: it may carry a password.
func classify(repoURL string, err error) error {
	repo := redactURL(repoURL)
	var keyErr *knownhosts.KeyError
	var revoked *knownhosts.RevokedError
	switch {
	case errors.Is(err, ErrHostKeyMismatch), errors.Is(err, ErrAuthFailed):
		return fmt.Errorf("%s: %w", repo, err)
	case errors.As(err, &keyErr), errors.As(err, &revoked):
		return fmt.Errorf("%s: %w: %w", repo, ErrHostKeyMismatch, err)
	case tlsFailure(err):
		return fmt.Errorf("%s: %w: %w (check the repository's caData and client certificate)", repo, ErrTLS, err)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return fmt.Errorf("%s: %w", repo, ErrRepoNotFound)
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed),
		strings.Contains(err.Error(), "ssh: unable to authenticate"):
		return fmt.Errorf("%s: %w", repo, ErrAuthFailed)
	}
	return fmt.Errorf("%s: %w", repo, err)
}

// redactURL hides the password of a URL (https://user:***@host/...).
// scp-like SSH addresses (git@host:org/repo) carry none and stay as they are.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	return u.Redacted()
}

// tlsFailure reports whether err is a server certificate that did not
// verify or a server that refused the client certificate.
func tlsFailure(err error) bool {
	var verr *tls.CertificateVerificationError
	var uerr x509.UnknownAuthorityError
	var herr x509.HostnameError
	if errors.As(err, &verr) || errors.As(err, &uerr) || errors.As(err, &herr) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "x509: certificate") || strings.Contains(msg, "tls: certificate required") ||
		strings.Contains(msg, "tls: bad certificate") || strings.Contains(msg, "tls: unknown certificate authority")
}
