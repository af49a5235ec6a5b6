package cmdline

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"testing"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		err  error
		code int
		msg  string
	}{
		{nil, ExitOK, ""},
		{flag.ErrHelp, ExitOK, ""},
		{ErrUsage, ExitUsage, ""},
		{fmt.Errorf("%w: app get: want NAME", ErrUsage), ExitUsage, "app get: want NAME"},
		{ErrReported, ExitError, ""},
		{errors.New("boom"), ExitError, "boom"},
		{context.Canceled, ExitError, "context canceled"},
		{WithCode(ExitFailed, errors.New("sync failed")), ExitFailed, "sync failed"},
		{fmt.Errorf("x: %w", WithCode(ExitTimeout, errors.New("timed out"))), ExitTimeout, "x: timed out"},
		{WithCode(ExitFailed, WithCode(ExitTimeout, errors.New("both"))), ExitFailed, "both"},
	}
	for _, tt := range tests {
		if got := ExitCode(tt.err); got != tt.code {
			t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.code)
		}
		if got := Message(tt.err); got != tt.msg {
			t.Errorf("Message(%v) = %q, want %q", tt.err, got, tt.msg)
		}
	}
}

func TestReport(t *testing.T) {
	for _, tt := range []struct {
		err    error
		code   int
		stderr string
	}{
		{nil, ExitOK, ""},
		{ErrUsage, ExitUsage, ""},
		{fmt.Errorf("%w: want NAME", ErrUsage), ExitUsage, "windlass: want NAME\n"},
		{errors.New("boom"), ExitError, "windlass: boom\n"},
	} {
		var b bytes.Buffer
		if got := Report(&b, tt.err); got != tt.code || b.String() != tt.stderr {
			t.Errorf("Report(%v) = %d, %q; want %d, %q", tt.err, got, b.String(), tt.code, tt.stderr)
		}
	}
}
