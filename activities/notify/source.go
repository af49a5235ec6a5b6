package notify

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/windlass-cd/windlass/internal/notifications"
	"github.com/windlass-cd/windlass/internal/secretstore"
)

// FileSource reads the configuration from a file, again whenever the
// file changes. A missing file is no configuration; a file that does not
// parse is an error (the last good configuration is not used: a
// delivery must not go out under settings the user replaced).
type FileSource struct {
	Path string

	mu    sync.Mutex
	mtime time.Time
	size  int64
	cfg   *notifications.Config
}

var _ ConfigSource = (*FileSource)(nil)

// Notifications implements ConfigSource.
func (f *FileSource) Notifications(context.Context) (*notifications.Config, error) {
	st, err := os.Stat(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cfg != nil && st.ModTime().Equal(f.mtime) && st.Size() == f.size {
		return f.cfg, nil
	}
	c, err := notifications.ParseFile(f.Path)
	if err != nil {
		return nil, err
	}
	f.cfg, f.mtime, f.size = c, st.ModTime(), st.Size()
	return c, nil
}

// StaticSource is a fixed configuration (nil: none).
type StaticSource struct{ Config *notifications.Config }

// Notifications implements ConfigSource.
func (s StaticSource) Notifications(context.Context) (*notifications.Config, error) {
	return s.Config, nil
}

// ConfigSecretName is the secret-store entry that holds the configuration
// saved through the API, under ConfigKey, in argocd-notifications-cm's
// YAML.
const (
	ConfigSecretName = "windlass-notifications-cm"
	ConfigKey        = "config.yaml"
)

// StoreSource reads the configuration the API saved in the secret store,
// parsed again only when its text changed.
type StoreSource struct {
	Store SecretReader

	mu   sync.Mutex
	text string
	cfg  *notifications.Config
}

var _ ConfigSource = (*StoreSource)(nil)

// Notifications implements ConfigSource.
func (s *StoreSource) Notifications(ctx context.Context) (*notifications.Config, error) {
	d, err := s.Store.Get(ctx, ConfigSecretName)
	if errors.Is(err, secretstore.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	text := string(d[ConfigKey])
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg != nil && text == s.text {
		return s.cfg, nil
	}
	data, err := notifications.DecodeData([]byte(text))
	if err != nil {
		return nil, err
	}
	c, err := notifications.Parse(data)
	if err != nil {
		return nil, err
	}
	s.text, s.cfg = text, c
	return c, nil
}
