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
	tests := []struct {
		name         string
		err          error
		nonRetryable bool
		typ          string
	}{
		{name: "nil", err: nil},
		{name: "plain error stays retryable", err: io.ErrUnexpectedEOF},
		{name: "wrapped sentinel", err: fmt.Errorf("resolve: %w", notFound), nonRetryable: true, typ: "NotFound"},
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
			if isApp != tt.nonRetryable {
				t.Fatalf("application error = %v, want %v", isApp, tt.nonRetryable)
			}
			if isApp && (!app.NonRetryable() || app.Type() != tt.typ || TypeOf(got) != tt.typ) {
				t.Fatalf("got type %q non-retryable %v, want %q", app.Type(), app.NonRetryable(), tt.typ)
			}
		})
	}
}
