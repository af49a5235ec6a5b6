package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
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
		if !errors.Is(err, temporalx.ErrDevServerNotBuiltIn) || !strings.Contains(err.Error(), "windlass-full "+tc.cmd) || cmdline.ExitCode(err) != 1 {
			t.Errorf("needDevServer(%q, false) = %v (exit %d): want ErrDevServerNotBuiltIn, the command to run instead and exit 1", tc.cmd, err, cmdline.ExitCode(err))
		}
	}
}

func TestRunUnknownCommand(t *testing.T) {
	if err := run(t.Context(), "frobnicate", nil); !errors.Is(err, cmdline.ErrUsage) {
		t.Fatalf("err = %v, want usage", err)
	}
}

func TestUsageText(t *testing.T) {
	for _, want := range []string{"plugin-server", "login", "logout", "app", "proj", "repo", "cluster", "account", "exit codes",
		"3  unauthenticated or forbidden", "6  timed out"} {
		if !strings.Contains(usage, want) {
			t.Errorf("the usage text does not mention %q", want)
		}
	}
}
