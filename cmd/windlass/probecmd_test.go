package main

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
)

func TestProbeCommand(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // its address answers no more
	tests := []struct {
		name    string
		args    []string
		wantErr string
		usage   bool
	}{
		{"healthy", []string{srv.URL + "/healthz"}, "", false},
		{"unavailable", []string{srv.URL + "/readyz"}, "503", false},
		{"unreachable", []string{"--timeout", "1s", gone.URL + "/healthz"}, "probe http://", false},
		{"no url", nil, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := runProbe(t.Context(), tt.args, &stderr)
			switch {
			case tt.usage:
				if !errors.Is(err, cmdline.ErrUsage) {
					t.Fatalf("err = %v, want usage", err)
				}
			case tt.wantErr == "":
				if err != nil {
					t.Fatalf("err = %v", err)
				}
			case err == nil || !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
