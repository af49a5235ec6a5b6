package auth

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/windlass-cd/windlass/internal/secretstore"
)

// Sentinel errors. The errors the Service returns wrap one of them in an
// *echo.HTTPError whose code is the HTTP status to answer with and whose
// message is safe to show the client.
var (
	// ErrUnauthenticated: no credentials were presented (401).
	ErrUnauthenticated = errors.New("authentication required")
	// ErrInvalidToken: the token is malformed, forged, expired, revoked or
	// of a disabled account (401).
	ErrInvalidToken = errors.New("invalid token")
	// ErrInvalidCredentials: wrong user name or password (401).
	ErrInvalidCredentials = errors.New("invalid user name or password")
	// ErrAccountDisabled: the account exists but is disabled, or lacks the
	// capability asked for (403).
	ErrAccountDisabled = errors.New("account disabled")
	// ErrForbidden: the caller may not do this (403), e.g. a missing CSRF
	// token or setting another account's password.
	ErrForbidden = errors.New("forbidden")
	// ErrInvalidArgument: a bad password, lifetime, subject or ID (400).
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrNotFound: no such account or API token (404).
	ErrNotFound = errors.New("not found")
	// ErrConflict: an API token of that ID exists (409).
	ErrConflict = errors.New("conflict")
	// ErrRateLimited: too many failed logins (429).
	ErrRateLimited = errors.New("too many failed logins")
	// ErrUnavailable: the revocation or secret store could not be asked,
	// so no token is accepted (503).
	ErrUnavailable = errors.New("revocation store unavailable")
)

var statusOf = map[error]int{
	ErrUnauthenticated:    http.StatusUnauthorized,
	ErrInvalidToken:       http.StatusUnauthorized,
	ErrInvalidCredentials: http.StatusUnauthorized,
	ErrAccountDisabled:    http.StatusForbidden,
	ErrForbidden:          http.StatusForbidden,
	ErrInvalidArgument:    http.StatusBadRequest,
	ErrNotFound:           http.StatusNotFound,
	ErrConflict:           http.StatusConflict,
	ErrRateLimited:        http.StatusTooManyRequests,
	ErrUnavailable:        http.StatusServiceUnavailable,
}

// fail returns an *echo.HTTPError with the status of sentinel and the
// client-facing message msg, wrapping sentinel and the causes (which are
// logged by the API's error handler, never shown).
func fail(sentinel error, msg string, causes ...error) error {
	return echo.NewHTTPError(statusOf[sentinel], msg).Wrap(errors.Join(append([]error{sentinel}, causes...)...))
}

// unavailable fails with 503 and a message that says what could not be
// done and names what did not answer: the Kubernetes API or Redis when the
// cause says so, else otherwise.
func unavailable(cannot, otherwise string, cause error) error {
	why := otherwise
	switch {
	case errors.Is(cause, secretstore.ErrUnreachable):
		why = secretstore.ErrUnreachable.Error()
	case errors.Is(cause, ErrRedisUnreachable):
		why = ErrRedisUnreachable.Error()
	}
	return fail(ErrUnavailable, cannot+": "+why+"; try again later", cause)
}
