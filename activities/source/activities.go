package source

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/windlass-cd/windlass/internal/failure"
)

// Activity names: wire contracts, never rename.
const (
	ResolveRevisionName = "source.ResolveRevision"
)

// CredentialResolver finds the credential for a repository at run time.
type CredentialResolver interface {
	Auth(ctx context.Context, repoURL string) (transport.AuthMethod, error)
}

// Activities is the Git capability. Create it with New.
type Activities struct {
	cacheDir string
	creds    CredentialResolver
	log      *slog.Logger
	locks    repoLocks
}

// New checks its dependencies and prepares cacheDir.
func New(cacheDir string, creds CredentialResolver, log *slog.Logger) (*Activities, error) {
	if cacheDir == "" {
		return nil, errors.New("source: cache dir is required")
	}
	if creds == nil {
		creds = Credentials{}
	}
	if log == nil {
		log = slog.Default()
	}
	for _, d := range []string{"mirrors", "trees"} {
		if err := os.MkdirAll(filepath.Join(cacheDir, d), 0o755); err != nil {
			return nil, fmt.Errorf("source: prepare cache: %w", err)
		}
	}
	return &Activities{cacheDir: cacheDir, creds: creds, log: log}, nil
}

// Register registers the activities under their constant names.
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.ResolveRevision, activity.RegisterOptions{Name: ResolveRevisionName})
}

// ResolveInput names a repository and a revision.
type ResolveInput struct {
	RepoURL  string `json:"repoURL"`
	Revision string `json:"revision"`
}

// ResolveOutput is the commit the revision points to.
type ResolveOutput struct {
	SHA string `json:"sha"`
	// Ref is the reference that matched (refs/heads/main, HEAD, ...), empty
	// for a SHA.
	Ref string `json:"ref,omitempty"`
}

const msgResolved = "revision resolved"

// ResolveRevision resolves a branch, tag, full SHA or HEAD to a commit SHA.
func (a *Activities) ResolveRevision(ctx context.Context, in ResolveInput) (ResolveOutput, error) {
	refs, err := a.lsRemote(ctx, in.RepoURL)
	if err != nil {
		return ResolveOutput{}, failure.Activity(fmt.Errorf("resolve %s: %w", in.Revision, err))
	}
	sha, ref, err := pickRevision(refs, in.Revision)
	if err != nil {
		return ResolveOutput{}, failure.Activity(fmt.Errorf("resolve %s in %s: %w", in.Revision, in.RepoURL, err))
	}
	a.log.Debug(msgResolved, "repo", in.RepoURL, "revision", in.Revision, "sha", sha)
	return ResolveOutput{SHA: sha, Ref: ref}, nil
}
