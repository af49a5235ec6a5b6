package failure

import (
	"errors"

	"go.temporal.io/sdk/temporal"
)

// Sentinel is an error that retrying cannot fix, or a transient one that
// workflows still need to tell apart by its type.
type Sentinel struct {
	typ, msg  string
	transient bool
}

// Permanent makes a sentinel with an error type (a wire contract) and text.
func Permanent(typ, msg string) *Sentinel { return &Sentinel{typ: typ, msg: msg} }

// Transient makes a sentinel for a failure that may pass, such as a
// dependency that does not answer: Activity keeps it retryable.
func Transient(typ, msg string) *Sentinel { return &Sentinel{typ: typ, msg: msg, transient: true} }

// TypeUnreachable is the type of a transient sentinel saying that a
// dependency (the Kubernetes API, Redis) does not answer.
const TypeUnreachable = "Unreachable"

func (s *Sentinel) Error() string { return s.msg }

// Type is the error type carried to Temporal.
func (s *Sentinel) Type() string { return s.typ }

// Activity returns err as an activity error with the type of the first
// sentinel in its chain (non-retryable unless the sentinel is transient),
// or err unchanged.
func Activity(err error) error {
	if err == nil {
		return nil
	}
	var s *Sentinel
	switch {
	case !errors.As(err, &s):
		return err
	case s.transient:
		return temporal.NewApplicationError(err.Error(), s.typ)
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), s.typ, nil)
}

// TypeOf returns the Temporal application error type in err's chain, or "".
func TypeOf(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Type()
	}
	var s *Sentinel
	if errors.As(err, &s) {
		return s.typ
	}
	return ""
}
