package failure

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"go.temporal.io/sdk/temporal"
)

func TestActivity(t *testing.T) {
	notFound := Permanent("NotFound", "not found")
	unreachable := Transient(TypeUnreachable, "the API is unreachable")
	tests := []struct {
		name         string
		err          error
		nonRetryable bool
		typ          string
	}{
		{name: "nil", err: nil},
		{name: "plain error stays retryable", err: io.ErrUnexpectedEOF},
		{name: "wrapped sentinel", err: fmt.Errorf("resolve: %w", notFound), nonRetryable: true, typ: "NotFound"},
		{name: "transient sentinel stays retryable", err: fmt.Errorf("list: %w", unreachable), typ: TypeUnreachable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Activity(tt.err)
			if tt.err == nil {
				if got != nil {
					t.Fatalf("Activity(nil) = %v", got)
				}
				return
			}
			var app *temporal.ApplicationError
			isApp := errors.As(got, &app)
			if isApp != (tt.typ != "") {
				t.Fatalf("application error = %v, want %v", isApp, tt.typ != "")
			}
			if isApp && (app.NonRetryable() != tt.nonRetryable || app.Type() != tt.typ || TypeOf(got) != tt.typ) {
				t.Fatalf("got type %q non-retryable %v, want %q non-retryable %v", app.Type(), app.NonRetryable(), tt.typ, tt.nonRetryable)
			}
		})
	}
}
