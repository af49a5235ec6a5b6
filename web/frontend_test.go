package web

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestFrontendUnit runs the UI's unit tests (vitest: the tree layout, the
// diff, YAML, formatting and the API client's problem handling). It needs
// the npm packages (make ui installs them); without them it skips, unless
// WINDLASS_UI_REQUIRED is set.
func TestFrontendUnit(t *testing.T) {
	vitest := filepath.Join("node_modules", ".bin", "vitest")
	if _, err := os.Stat(vitest); err != nil {
		if os.Getenv("WINDLASS_UI_REQUIRED") != "" {
			t.Fatalf("the UI's npm packages are not installed (make ui installs them): %v", err)
		}
		t.Skip("the UI's npm packages are not installed (make ui installs them)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, vitest, "run", "--reporter=dot")
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "CI=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("vitest: %v\n%s", err, out)
	}
	t.Logf("vitest:\n%s", out)
}
