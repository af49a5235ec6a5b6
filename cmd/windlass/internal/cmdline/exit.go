package cmdline

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit codes of the windlass commands (documented in the usage text).
const (
	ExitOK           = 0
	ExitError        = 1
	ExitUsage        = 2
	ExitUnauthorized = 3 // 401 or 403
	ExitNotFound     = 4 // 404
	ExitFailed       = 5 // a sync or rollback that did not succeed, or a 409
	ExitTimeout      = 6 // app wait (or sync) ran out of time
)

// ErrUsage is a usage error: wrap it with the message ("%w: want NAME"),
// or return it alone when the message has been printed.
var ErrUsage = errors.New("usage")

// ErrReported ends a command whose message has been printed already (or
// that has none, as app diff's differences).
var ErrReported = errors.New("reported")

// coder is an error that chooses its exit code.
type coder interface{ ExitCode() int }

// codedError carries the exit code of an error.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }
func (e *codedError) ExitCode() int { return e.code }

// WithCode is err with the exit code code.
func WithCode(code int, err error) error { return &codedError{code: code, err: err} }

// ExitCode maps an error to the process's exit code: 0 for none or a
// request for help, ExitUsage for a usage error, the code of the first
// error in the chain with an ExitCode method, else ExitError.
func ExitCode(err error) int {
	var c coder
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.Is(err, ErrUsage):
		return ExitUsage
	case errors.As(err, &c):
		return c.ExitCode()
	}
	return ExitError
}

// Message is what to print for err, or "" when there is nothing to print
// (help was asked for, or the command printed its message itself).
func Message(err error) string {
	if err == nil || err == ErrUsage || errors.Is(err, flag.ErrHelp) || errors.Is(err, ErrReported) {
		return ""
	}
	return strings.TrimPrefix(err.Error(), ErrUsage.Error()+": ")
}

// Report prints the message of err, if any, to stderr and returns the
// exit code.
func Report(stderr io.Writer, err error) int {
	if msg := Message(err); msg != "" {
		fmt.Fprintln(stderr, "windlass:", msg)
	}
	return ExitCode(err)
}
