package roles

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/windlass-cd/windlass/internal/temporalx"
)

// archiveOff disables archival when given as the history archive URI.
const archiveOff = "off"

// archiveSettings are the retention and archive flags of the roles that run
// the embedded Temporal server (`windlass dev` and `windlass temporal`).
type archiveSettings struct {
	retention     string
	Retention     time.Duration
	HistoryURI    string
	VisibilityURI string
	S3            temporalx.S3Archive
}

func bindArchive(fs *flag.FlagSet, a *archiveSettings) {
	fs.StringVar(&a.retention, "retention", env("TEMPORAL_RETENTION", "30d"), "how long Temporal keeps closed syncs before only the archive has them, e.g. 30d or 12h (env WINDLASS_TEMPORAL_RETENTION)")
	fs.StringVar(&a.HistoryURI, "archive-history-uri", env("ARCHIVE_HISTORY_URI", ""), `where closed workflows' histories are archived: file:///<dir> or s3://<bucket>[/<prefix>]; default <data-dir>/archive/history; "off" turns archival off (env WINDLASS_ARCHIVE_HISTORY_URI)`)
	fs.StringVar(&a.VisibilityURI, "archive-visibility-uri", env("ARCHIVE_VISIBILITY_URI", ""), "where closed workflows' visibility records are archived, as --archive-history-uri; default <data-dir>/archive/visibility (env WINDLASS_ARCHIVE_VISIBILITY_URI)")
	fs.StringVar(&a.S3.Region, "archive-s3-region", env("ARCHIVE_S3_REGION", ""), "region of s3:// archives; credentials come from the AWS SDK's chain (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, a profile or a role) (env WINDLASS_ARCHIVE_S3_REGION)")
	fs.StringVar(&a.S3.Endpoint, "archive-s3-endpoint", env("ARCHIVE_S3_ENDPOINT", ""), "base URL of an S3-compatible store; default AWS (env WINDLASS_ARCHIVE_S3_ENDPOINT)")
	fs.BoolVar(&a.S3.PathStyle, "archive-s3-path-style", env("ARCHIVE_S3_PATH_STYLE", "") == "true", "address buckets by path, as most S3-compatible stores want (env WINDLASS_ARCHIVE_S3_PATH_STYLE)")
}

// parseRetention reads a Go duration or a whole number of days ("30d").
func parseRetention(v string) (time.Duration, error) {
	var (
		d   time.Duration
		err error
	)
	if days, ok := strings.CutSuffix(v, "d"); ok {
		var n int
		n, err = strconv.Atoi(days)
		d = time.Duration(n) * 24 * time.Hour
	} else {
		d, err = time.ParseDuration(v)
	}
	if err != nil || d < time.Second {
		return 0, fmt.Errorf("retention %q: want a duration of a second or more, such as 30d or 12h", v)
	}
	return d, nil
}

// validate parses the retention and checks the URIs go together;
// StartDevServer checks that the archive can be written.
func (a *archiveSettings) validate() error {
	d, err := parseRetention(a.retention)
	if err != nil {
		return err
	}
	a.Retention = d
	switch {
	case a.HistoryURI == archiveOff:
		return nil
	case (a.HistoryURI == "") != (a.VisibilityURI == ""):
		return errors.New("archive-history-uri and archive-visibility-uri go together: set both or neither")
	}
	return nil
}

// archival is the server's archive: the given URIs, or files under
// <dataDir>/archive; nil when archival is off.
func (a archiveSettings) archival(dataDir string) *temporalx.ArchivalConfig {
	switch a.HistoryURI {
	case archiveOff:
		return nil
	case "":
		return temporalx.FileArchival(filepath.Join(dataDir, "archive"))
	}
	return &temporalx.ArchivalConfig{HistoryURI: a.HistoryURI, VisibilityURI: a.VisibilityURI, S3: a.S3}
}

// archiveURI names the history archive for the start banner.
func archiveURI(a *temporalx.ArchivalConfig) string {
	if a == nil {
		return "(off)"
	}
	return a.HistoryURI
}
