package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadConfig(t *testing.T) {
	tests := []struct {
		name    string
		load    func([]string) error
		args    []string
		wantErr string
	}{
		{"dev defaults", func(a []string) error { _, err := loadDevConfig(a); return err }, nil, ""},
		{"dev bad temporal address", func(a []string) error { _, err := loadDevConfig(a); return err }, []string{"--temporal-address", "nohost"}, "temporal-address"},
		{"dev bad log level", func(a []string) error { _, err := loadDevConfig(a); return err }, []string{"--log-level", "loud"}, "log-level"},
		{"dev bad api address", func(a []string) error { _, err := loadDevConfig(a); return err }, []string{"--api-address", "8080"}, "api-address"},
		{"dev stray argument", func(a []string) error { _, err := loadDevConfig(a); return err }, []string{"extra"}, "unexpected arguments"},
		{"worker needs redis", func(a []string) error { _, err := loadWorkerConfig(a); return err }, nil, "redis-address is required"},
		{"worker ok", func(a []string) error { _, err := loadWorkerConfig(a); return err }, []string{"--redis-address", "127.0.0.1:6379"}, ""},
		{"worker bad refresh", func(a []string) error { _, err := loadWorkerConfig(a); return err }, []string{"--redis-address", "r:1", "--refresh-seconds", "0"}, "refresh-seconds"},
		{"server needs redis", func(a []string) error { _, err := loadServerConfig(a); return err }, []string{"--api-address", "127.0.0.1:0"}, "redis-address is required"},
		{"server ok", func(a []string) error { _, err := loadServerConfig(a); return err }, []string{"--api-address", "127.0.0.1:0", "--redis-address", "127.0.0.1:6379"}, ""},
		{"temporal defaults", func(a []string) error { _, err := loadTemporalConfig(a); return err }, nil, ""},
		{"temporal port zero, no UI", func(a []string) error { _, err := loadTemporalConfig(a); return err }, []string{"--address", "127.0.0.1:0", "--ui-address", "off"}, ""},
		{"temporal bad address", func(a []string) error { _, err := loadTemporalConfig(a); return err }, []string{"--address", "7233"}, "address"},
		{"temporal bad ui address", func(a []string) error { _, err := loadTemporalConfig(a); return err }, []string{"--ui-address", "8233"}, "ui-address"},
		{"temporal bad debug address", func(a []string) error { _, err := loadTemporalConfig(a); return err }, []string{"--debug-address", "6060"}, "debug-address"},
		{"temporal empty data dir", func(a []string) error { _, err := loadTemporalConfig(a); return err }, []string{"--data-dir", ""}, "data-dir is required"},
		{"temporal worker flag", func(a []string) error { _, err := loadTemporalConfig(a); return err }, []string{"--redis-address", "r:1"}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("TEMPORAL_ADDRESS", "")
			t.Setenv("WINDLASS_TEMPORAL_ADDRESS", "127.0.0.1:7233")
			err := tt.load(tt.args)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestRunUnknownCommand(t *testing.T) {
	if err := run(t.Context(), "frobnicate", nil); !errors.Is(err, errUsage) {
		t.Fatalf("err = %v, want usage", err)
	}
	// rollback needs NAME and ID.
	if err := runApp(t.Context(), []string{"rollback", "x"}, nil); !errors.Is(err, errUsage) {
		t.Fatalf("err = %v, want usage", err)
	}
}

// Relative directories (windlass dev's default is .windlass) become
// absolute, as the renderers need.
func TestConfigDirsAreAbsolute(t *testing.T) {
	t.Setenv("WINDLASS_TEMPORAL_ADDRESS", "127.0.0.1:7233")
	wd := t.TempDir()
	t.Chdir(wd)
	dev, err := loadDevConfig([]string{"--data-dir", "state"})
	if err != nil {
		t.Fatal(err)
	}
	wk, err := loadWorkerConfig([]string{"--redis-address", "127.0.0.1:6379", "--cache-dir", "cache"})
	if err != nil {
		t.Fatal(err)
	}
	tc, err := loadTemporalConfig([]string{"--data-dir", "t"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, got, want string }{
		{"dev data dir", dev.DataDir, filepath.Join(wd, "state")},
		{"dev cache dir", dev.CacheDir, filepath.Join(wd, "state", "git")},
		{"worker cache dir", wk.CacheDir, filepath.Join(wd, "cache")},
		{"temporal data dir", tc.DataDir, filepath.Join(wd, "t")},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
