package source

import (
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/windlass-cd/windlass/internal/failure"
)

// Errors that retrying cannot fix; their types travel to the workflow. An
// unreachable server is a plain (retryable) error.
var (
	ErrRepoNotFound     = failure.Permanent("RepositoryNotFound", "repository not found")
	ErrAuthFailed       = failure.Permanent("AuthenticationFailed", "authentication failed")
	ErrRevisionNotFound = failure.Permanent("RevisionNotFound", "revision not found")
)

// classify maps go-git transport errors onto our sentinels.
func classify(repoURL string, err error) error {
	switch {
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return fmt.Errorf("%s: %w", repoURL, ErrRepoNotFound)
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return fmt.Errorf("%s: %w", repoURL, ErrAuthFailed)
	}
	return fmt.Errorf("%s: %w", repoURL, err)
}
