package settings

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/secretstore"
)

// secretCustomizations holds the resource customizations source.
const secretCustomizations = "windlass-settings-resource-customizations"

// CustomizationsSource is the Git tree of Lua health and action scripts
// (Argo CD's resource_customizations layout) set through the API. The
// workers read it with their Git credentials (a registered repository's);
// it holds none itself. A worker's --resource-customizations flags win.
type CustomizationsSource struct {
	RepoURL string `json:"repoURL"`
	// Path is a folder of the repository ("" is its root).
	Path string `json:"path,omitempty"`
	// Revision is a branch, tag or commit ("" is HEAD).
	Revision string `json:"revision,omitempty"`
}

// Validate checks the source; an empty RepoURL (no source) is valid only
// without a path and revision.
func (c CustomizationsSource) Validate() error {
	switch {
	case c.RepoURL == "" && (c.Path != "" || c.Revision != ""):
		return fmt.Errorf("%w: repoURL is required with a path or revision", ErrInvalid)
	case c.RepoURL == "":
		return nil
	case strings.ContainsAny(c.RepoURL, " \t\n"):
		return fmt.Errorf("%w: repoURL contains white space", ErrInvalid)
	case appspec.RepoURLHasPassword(c.RepoURL):
		return fmt.Errorf("%w: repoURL holds a password: register the repository with its credential instead", ErrInvalid)
	case strings.ContainsAny(c.Revision, " \t\n") || strings.HasPrefix(c.Revision, "-"):
		return fmt.Errorf("%w: revision %q is not a branch, tag or commit", ErrInvalid, c.Revision)
	case path.IsAbs(c.Path) || strings.Contains(c.Path, "\\"):
		return fmt.Errorf("%w: path must be relative to the repository root", ErrInvalid)
	}
	for _, seg := range strings.Split(c.Path, "/") {
		if seg == ".." {
			return fmt.Errorf("%w: path must stay inside the repository", ErrInvalid)
		}
	}
	if err := appspec.CheckRepoTransport(c.RepoURL); err != nil {
		return fmt.Errorf("%w: repoURL: %w", ErrInvalid, err)
	}
	return nil
}

// Customizations returns the stored source; its RepoURL is "" when none
// is set.
func (s *Store) Customizations(ctx context.Context) (CustomizationsSource, error) {
	data, err := s.s.Get(ctx, secretCustomizations)
	if errors.Is(err, secretstore.ErrNotFound) {
		return CustomizationsSource{}, nil
	}
	if err != nil {
		return CustomizationsSource{}, fmt.Errorf("load the resource customizations source: %w", err)
	}
	var c CustomizationsSource
	if err := json.Unmarshal(data["spec"], &c); err != nil {
		return CustomizationsSource{}, fmt.Errorf("decode the resource customizations source: %w", err)
	}
	return c, nil
}

// PutCustomizations stores the source; an empty RepoURL clears it.
func (s *Store) PutCustomizations(ctx context.Context, c CustomizationsSource) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if c.RepoURL == "" {
		if err := s.s.Delete(ctx, secretCustomizations); err != nil && !errors.Is(err, secretstore.ErrNotFound) {
			return fmt.Errorf("clear the resource customizations source: %w", err)
		}
		return nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := s.s.Put(ctx, secretCustomizations, map[string][]byte{"spec": b}); err != nil {
		return fmt.Errorf("store the resource customizations source: %w", err)
	}
	return nil
}
