package roles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/internal/temporalx"
)

func TestArchiveFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name      string
		args      []string
		wantErr   string
		retention time.Duration
		archival  *temporalx.ArchivalConfig
	}{
		{name: "defaults", retention: 30 * 24 * time.Hour, archival: temporalx.FileArchival(filepath.Join(dir, "archive"))},
		{name: "retention in hours", args: []string{"--retention", "12h"}, retention: 12 * time.Hour, archival: temporalx.FileArchival(filepath.Join(dir, "archive"))},
		{name: "off", args: []string{"--archive-history-uri", "off", "--retention", "7d"}, retention: 7 * 24 * time.Hour},
		{
			name: "s3", retention: 30 * 24 * time.Hour,
			args: []string{"--archive-history-uri", "s3://b/h", "--archive-visibility-uri", "s3://b/v", "--archive-s3-region", "eu-west-1", "--archive-s3-endpoint", "http://127.0.0.1:9000", "--archive-s3-path-style"},
			archival: &temporalx.ArchivalConfig{HistoryURI: "s3://b/h", VisibilityURI: "s3://b/v",
				S3: temporalx.S3Archive{Region: "eu-west-1", Endpoint: "http://127.0.0.1:9000", PathStyle: true}},
		},
		{name: "bad retention", args: []string{"--retention", "forever"}, wantErr: `retention "forever": want a duration`},
		{name: "retention under a second", args: []string{"--retention", "10ms"}, wantErr: "a second or more"},
		{name: "one URI alone", args: []string{"--archive-history-uri", "s3://b/h"}, wantErr: "set both or neither"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadTemporalConfig(append([]string{"--data-dir", dir}, tc.args...))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Retention != tc.retention {
				t.Errorf("retention = %s, want %s", cfg.Retention, tc.retention)
			}
			if diff := cmp.Diff(tc.archival, cfg.archival(dir)); diff != "" {
				t.Errorf("archival (-want +got):\n%s", diff)
			}
		})
	}
}

// An archive directory that cannot be written stops `windlass temporal` at
// start with an error naming it.
func TestRunTemporalUnwritableArchive(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	arc := "file://" + filepath.Join(file, "archive")
	cfg, err := loadTemporalConfig([]string{"--data-dir", t.TempDir(), "--address", "127.0.0.1:0", "--ui-address", "off",
		"--archive-history-uri", arc, "--archive-visibility-uri", arc})
	if err != nil {
		t.Fatal(err)
	}
	err = runTemporal(t.Context(), cfg, &strings.Builder{})
	if want := "archive directory " + filepath.Join(file, "archive") + " is not writable"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("runTemporal error = %v, want %q", err, want)
	}
}
