package settings

import (
	"context"
	"errors"
	"fmt"

	"github.com/windlass-cd/windlass/internal/secretstore"
)

// A credential template (Argo CD's repocreds) is a Repository whose URL
// is a prefix: every repository under it that is not registered itself
// uses its credential.

// ValidateTemplate checks a credential template: a repository without a
// project (a template serves every project).
func ValidateTemplate(r Repository) error {
	if r.Project != "" {
		return fmt.Errorf("%w: a credential template has no project; register the repository to scope it", ErrInvalid)
	}
	return r.Validate()
}

// PutRepoCreds stores or replaces a credential template.
func (s *Store) PutRepoCreds(ctx context.Context, r Repository) error {
	if err := ValidateTemplate(r); err != nil {
		return err
	}
	if err := s.s.Put(ctx, key(prefixCreds, r.URL), r.data()); err != nil {
		return fmt.Errorf("store credential template %s: %w", redactURL(r.URL), err)
	}
	return nil
}

// RepoCredsTemplate returns the credential template of exactly prefix.
func (s *Store) RepoCredsTemplate(ctx context.Context, prefix string) (Repository, error) {
	data, err := s.s.Get(ctx, key(prefixCreds, prefix))
	if errors.Is(err, secretstore.ErrNotFound) {
		return Repository{}, fmt.Errorf("credential template %s: %w", redactURL(prefix), ErrNotFound)
	}
	if err != nil {
		return Repository{}, fmt.Errorf("load credential template %s: %w", redactURL(prefix), err)
	}
	return repoFrom(data), nil
}

// RepoCreds lists the credential templates, with their secrets.
func (s *Store) RepoCreds(ctx context.Context) ([]Repository, error) {
	return s.listRepos(ctx, prefixCreds)
}

// DeleteRepoCreds forgets a credential template.
func (s *Store) DeleteRepoCreds(ctx context.Context, prefix string) error {
	err := s.s.Delete(ctx, key(prefixCreds, prefix))
	if errors.Is(err, secretstore.ErrNotFound) {
		return fmt.Errorf("credential template %s: %w", redactURL(prefix), ErrNotFound)
	}
	return err
}
