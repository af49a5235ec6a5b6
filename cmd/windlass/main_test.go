package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/windlass-cd/windlass/internal/temporalx"
)

// TestNeedDevServer: the production build (-tags nodevserver) refuses dev
// and temporal with an error that names the build to run instead; a full
// build lets them through. test/deploy's TestProductionBuild runs the real
// production binary.
func TestNeedDevServer(t *testing.T) {
	for _, tc := range []struct {
		cmd     string
		builtIn bool
		wantErr bool
	}{
		{"dev", true, false},
		{"temporal", true, false},
		{"dev", false, true},
		{"temporal", false, true},
	} {
		err := needDevServer(tc.cmd, tc.builtIn)
		if (err != nil) != tc.wantErr {
			t.Errorf("needDevServer(%q, %v) = %v, want error %v", tc.cmd, tc.builtIn, err, tc.wantErr)
			continue
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, temporalx.ErrDevServerNotBuiltIn) || !strings.Contains(err.Error(), "windlass-full "+tc.cmd) || exitCode(err) != 1 {
			t.Errorf("needDevServer(%q, false) = %v (exit %d): want ErrDevServerNotBuiltIn, the command to run instead and exit 1", tc.cmd, err, exitCode(err))
		}
	}
}
