package temporalx

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// DefaultRetention is how long a namespace keeps closed workflows when
// DevServerConfig.Retention is zero.
const DefaultRetention = 30 * 24 * time.Hour

// Archive URI schemes the embedded server has archivers for.
const (
	SchemeFile = "file"
	SchemeS3   = "s3"
)

// ArchivalConfig turns on Temporal archival: the history and visibility
// record of every closed workflow are copied to the archive, and stay
// readable through the frontend after retention deletes them.
type ArchivalConfig struct {
	// HistoryURI and VisibilityURI are file:///<absolute dir> (the
	// filestore archiver) or s3://<bucket>[/<prefix>] (the s3store
	// archiver). Both are required.
	HistoryURI    string
	VisibilityURI string
	// S3 configures the s3store archiver, for s3:// URIs. Credentials come
	// from the AWS SDK's default chain (AWS_ACCESS_KEY_ID and
	// AWS_SECRET_ACCESS_KEY, a profile, an instance role), never from here.
	S3 S3Archive
}

// S3Archive is where an S3-compatible store answers.
type S3Archive struct {
	// Region is required for s3:// URIs.
	Region string
	// Endpoint is the store's base URL; empty means AWS.
	Endpoint string
	// PathStyle addresses buckets as <endpoint>/<bucket>, as most
	// S3-compatible stores other than AWS want.
	PathStyle bool
}

// FileArchival archives history and visibility under dir, in history/ and
// visibility/.
func FileArchival(dir string) *ArchivalConfig {
	return &ArchivalConfig{
		HistoryURI:    (&url.URL{Scheme: SchemeFile, Path: filepath.Join(dir, "history")}).String(),
		VisibilityURI: (&url.URL{Scheme: SchemeFile, Path: filepath.Join(dir, "visibility")}).String(),
	}
}

// Validate checks the URIs and, for file URIs, that the directory can be
// written now: a directory that cannot is refused at start rather than
// losing history when the first workflow closes.
func (a *ArchivalConfig) Validate() error {
	var errs []error
	for _, u := range []struct{ name, uri string }{{"history", a.HistoryURI}, {"visibility", a.VisibilityURI}} {
		if err := a.validateURI(u.uri); err != nil {
			errs = append(errs, fmt.Errorf("%s archive: %w", u.name, err))
		}
	}
	return errors.Join(errs...)
}

func (a *ArchivalConfig) validateURI(uri string) error {
	if uri == "" {
		return errors.New("URI is required")
	}
	u, err := url.Parse(uri)
	if err != nil {
		return fmt.Errorf("URI %q: %w", uri, err)
	}
	switch u.Scheme {
	case SchemeFile:
		if u.Host != "" || !filepath.IsAbs(u.Path) {
			return fmt.Errorf("URI %q: want file:///<absolute directory>", uri)
		}
		return checkWritableDir(u.Path)
	case SchemeS3:
		if u.Host == "" {
			return fmt.Errorf("URI %q: want s3://<bucket>[/<prefix>]", uri)
		}
		if a.S3.Region == "" {
			return fmt.Errorf("URI %q: an S3 region is required", uri)
		}
		if a.S3.Endpoint != "" {
			if e, err := url.Parse(a.S3.Endpoint); err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
				return fmt.Errorf("S3 endpoint %q: want http(s)://host[:port]", a.S3.Endpoint)
			}
		}
		return nil
	default:
		return fmt.Errorf("URI %q: scheme must be %s or %s", uri, SchemeFile, SchemeS3)
	}
}

// checkWritableDir creates dir if missing and writes and removes a probe
// file in it.
func checkWritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("archive directory %s is not writable: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".write-probe-*")
	if err != nil {
		return fmt.Errorf("archive directory %s is not writable: %w", dir, err)
	}
	name := f.Name()
	err = errors.Join(f.Close(), os.Remove(name))
	if err != nil {
		return fmt.Errorf("archive directory %s is not writable: %w", dir, err)
	}
	return nil
}
