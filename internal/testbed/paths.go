package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// EnvBinDir overrides where the control-plane binaries are looked up.
const EnvBinDir = "WINDLASS_TESTBED_BIN"

// repoRoot walks up from the working directory to the first directory that
// holds a go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("get working directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("look for go.mod: %w", err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod found above the working directory")
		}
		dir = parent
	}
}

// defaultBinDir is $WINDLASS_TESTBED_BIN, else <repo root>/bin/testbed.
func defaultBinDir() (string, error) {
	if d := os.Getenv(EnvBinDir); d != "" {
		return filepath.Abs(d)
	}
	root, err := repoRoot()
	if err != nil {
		return "", fmt.Errorf("find the test-bed binaries (set %s): %w", EnvBinDir, err)
	}
	return filepath.Join(root, "bin", "testbed"), nil
}
