package settings

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/secretstore"
)

// Errors of the store.
var (
	// ErrNotFound: no such project, repository or cluster.
	ErrNotFound = errors.New("not found")
	// ErrReadOnly: the object comes from a configuration file.
	ErrReadOnly = errors.New("read-only")
	// ErrInvalid: the object is not valid.
	ErrInvalid = errors.New("invalid")
	// ErrProjectNotFound: no such project. Retrying cannot fix it.
	ErrProjectNotFound = failure.Permanent("ProjectNotFound", "project not found")
)

// Secret name prefixes.
const (
	prefixProject = "windlass-project-"
	prefixRepo    = "windlass-repo-"
	prefixCluster = "windlass-cluster-"
	prefixCreds   = "windlass-repocreds-"
)

// Store reads and writes the settings.
type Store struct {
	s secretstore.Store
	// files are the projects of the projects file: read-only.
	files map[string]appspec.Project
	// cache, when set (WatchProjects), answers Project from memory.
	cache atomic.Pointer[projectCache]
}

// Secrets is the secret store the settings live in.
func (s *Store) Secrets() secretstore.Store { return s.s }

// New makes a store on s; fileProjects are read-only.
func New(s secretstore.Store, fileProjects ...appspec.Project) (*Store, error) {
	if s == nil {
		return nil, errors.New("settings: a secret store is required")
	}
	st := &Store{s: s, files: map[string]appspec.Project{}}
	for _, p := range fileProjects {
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("project %s: %w", p.Name, err)
		}
		st.files[p.Name] = p
	}
	return st, nil
}

// Project returns a project: from the projects file, else the store, else
// the built-in default. Missing projects wrap ErrProjectNotFound.
func (s *Store) Project(ctx context.Context, name string) (appspec.Project, error) {
	if p, ok := s.files[name]; ok {
		return p, nil
	}
	if c := s.cache.Load(); c != nil {
		if p, ok := c.get(name); ok {
			return p, nil
		}
	}
	data, err := s.s.Get(ctx, prefixProject+name)
	switch {
	case errors.Is(err, secretstore.ErrNotFound) && name == appspec.DefaultProject:
		return appspec.DefaultProjectSpec(), nil
	case errors.Is(err, secretstore.ErrNotFound):
		return appspec.Project{}, fmt.Errorf("%w: %s", ErrProjectNotFound, name)
	case err != nil:
		return appspec.Project{}, fmt.Errorf("load project %s: %w", name, err)
	}
	var p appspec.Project
	if err := json.Unmarshal(data["spec"], &p); err != nil {
		return appspec.Project{}, fmt.Errorf("decode project %s: %w", name, err)
	}
	return p, nil
}

// Projects lists every project, sorted by name.
func (s *Store) Projects(ctx context.Context) ([]appspec.Project, error) {
	names, err := s.s.List(ctx, prefixProject)
	if err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	seen := map[string]bool{appspec.DefaultProject: true}
	all := []string{appspec.DefaultProject}
	for n := range s.files {
		if !seen[n] {
			seen[n] = true
			all = append(all, n)
		}
	}
	for _, n := range names {
		n = strings.TrimPrefix(n, prefixProject)
		if !seen[n] {
			seen[n] = true
			all = append(all, n)
		}
	}
	slices.Sort(all)
	out := make([]appspec.Project, 0, len(all))
	for _, n := range all {
		p, err := s.Project(ctx, n)
		if errors.Is(err, ErrProjectNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// ReadOnly reports whether a project comes from the projects file.
func (s *Store) ReadOnly(name string) bool {
	_, ok := s.files[name]
	return ok
}

// PutProject creates or replaces a project.
func (s *Store) PutProject(ctx context.Context, p appspec.Project) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if s.ReadOnly(p.Name) {
		return fmt.Errorf("project %s is defined in the projects file: %w", p.Name, ErrReadOnly)
	}
	p.ForeignRepos = nil // derived when read for a check
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := s.s.Put(ctx, prefixProject+p.Name, map[string][]byte{"spec": b}); err != nil {
		return fmt.Errorf("store project %s: %w", p.Name, err)
	}
	return nil
}

// DeleteProject deletes a stored project (the default project reverts to
// the built-in one).
func (s *Store) DeleteProject(ctx context.Context, name string) error {
	if s.ReadOnly(name) {
		return fmt.Errorf("project %s is defined in the projects file: %w", name, ErrReadOnly)
	}
	err := s.s.Delete(ctx, prefixProject+name)
	if errors.Is(err, secretstore.ErrNotFound) {
		if name == appspec.DefaultProject {
			return nil
		}
		return fmt.Errorf("project %s: %w", name, ErrNotFound)
	}
	return err
}

// key names a repository or cluster's secret by a hash of its identity.
func key(prefix, id string) string {
	sum := sha256.Sum256([]byte(id))
	return prefix + hex.EncodeToString(sum[:10])
}
