package cluster

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
)

// Errors that retrying cannot fix; failure.Activity turns them into
// non-retryable activity errors of their type. Everything else (the API
// server unreachable, conflicts, timeouts, throttling) stays retryable.
var (
	ErrUnknownKind = failure.Permanent("UnknownKind", "resource kind is not served by the cluster")
	ErrApply       = failure.Permanent("ApplyFailed", "apply rejected")
	// ErrForbidden is wrapped by ForbiddenError.
	ErrForbidden = failure.Permanent("ResourceForbidden", "resources are not permitted by the project")
	// ErrSharedResource: FailOnSharedResource=true and a resource is
	// tracked by another app.
	ErrSharedResource = failure.Permanent("SharedResource", "resource is managed by another application")
)

// ForbiddenError lists the objects the project does not permit.
type ForbiddenError struct {
	Project   string
	Resources []appspec.ResourceKey
}

func (e *ForbiddenError) Error() string {
	names := make([]string, len(e.Resources))
	for i, k := range e.Resources {
		names[i] = describe(k)
		if k.Group != "" {
			names[i] = k.Group + "/" + names[i]
		}
	}
	return fmt.Sprintf("project %s does not permit %s", e.Project, strings.Join(names, ", "))
}

// Unwrap makes every ForbiddenError match ErrForbidden.
func (e *ForbiddenError) Unwrap() error { return ErrForbidden }

// apiError marks API errors that retrying cannot fix (the object is
// invalid, refused, or names a missing namespace) as ErrApply.
func apiError(err error) error {
	if err == nil || errors.Is(err, ErrApply) {
		return err
	}
	switch {
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsForbidden(err),
		apierrors.IsNotFound(err), apierrors.IsMethodNotSupported(err), apierrors.IsNotAcceptable(err),
		apierrors.IsUnsupportedMediaType(err), apierrors.IsRequestEntityTooLargeError(err):
		return fmt.Errorf("%w: %w", ErrApply, err)
	}
	return err
}

// transient reports whether an API error may go away on retry.
func transient(err error) bool {
	if apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || apierrors.IsConflict(err) {
		return true
	}
	var status apierrors.APIStatus
	return !errors.As(err, &status) // no answer from the server at all
}

// immutable reports an update refused because it changes an immutable field.
func immutable(err error) bool {
	return apierrors.IsInvalid(err) && strings.Contains(err.Error(), "immutable")
}
