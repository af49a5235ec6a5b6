package source

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// knownHostsFile writes known_hosts lines to a file named by their hash
// under dir (the system temporary directory when empty) and returns its
// path; an existing file with that name is reused.
func knownHostsFile(dir, lines string) (string, error) {
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "windlass-known-hosts")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("known_hosts dir: %w", err)
	}
	sum := sha256.Sum256([]byte(lines))
	path := filepath.Join(dir, hex.EncodeToString(sum[:12]))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	tmp, err := os.CreateTemp(dir, ".known-hosts-*")
	if err != nil {
		return "", fmt.Errorf("write known_hosts: %w", err)
	}
	_, werr := tmp.WriteString(lines + "\n")
	if err := tmp.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("write known_hosts: %w", werr)
	}
	return path, nil
}
