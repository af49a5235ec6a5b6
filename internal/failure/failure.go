package failure

import (
	"errors"

	"go.temporal.io/sdk/temporal"
)

// Sentinel is an error that retrying cannot fix.
type Sentinel struct {
	typ, msg string
}

// Permanent makes a sentinel with an error type (a wire contract) and text.
func Permanent(typ, msg string) *Sentinel { return &Sentinel{typ: typ, msg: msg} }

func (s *Sentinel) Error() string { return s.msg }

// Type is the error type carried to Temporal.
func (s *Sentinel) Type() string { return s.typ }

// Activity returns err as an activity error: non-retryable with the type of
// the first sentinel in its chain, or err unchanged.
func Activity(err error) error {
	if err == nil {
		return nil
	}
	var s *Sentinel
	if errors.As(err, &s) {
		return temporal.NewNonRetryableApplicationError(err.Error(), s.typ, nil)
	}
	return err
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
