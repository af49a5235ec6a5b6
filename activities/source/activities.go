package source

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/windlass-cd/windlass/internal/appspec"
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

// Defaults of the options.
const (
	// DefaultRefCacheTTL is how long an ls-remote result is reused.
	DefaultRefCacheTTL = 10 * time.Second
	// DefaultTreeGrace is how long a checkout stays protected from eviction
	// after its last use; it outlasts every activity that reads a tree.
	DefaultTreeGrace = 15 * time.Minute
)

// Activities is the Git capability. Create it with New.
type Activities struct {
	cacheDir string
	creds    CredentialResolver
	log      *slog.Logger
	locks    repoLocks
	refCache RefCache
	refTTL   time.Duration
	// refCacheDown skips the ref cache for a while after it failed.
	refCacheDown breaker
	treeGrace    time.Duration
	// netTimeout bounds a Git server's silence (0: DefaultNetTimeout).
	netTimeout time.Duration
	sizes      treeSizes
	// commits holds the metadata of the commits read (RevisionMetadata).
	commits knownCommits
	// shallow fetches a commit alone into an empty mirror (WithShallowFetch).
	shallow bool
	// oci bounds OCI sources (WithOCILimits).
	oci OCILimits
	// submodules allows the submodules checked out (WithSubmodules; nil:
	// none are).
	submodules *appspec.Project
}

// Option configures New.
type Option func(*Activities)

// WithRefCache shares ls-remote results through c (Redis, typically) for
// ttl (0: DefaultRefCacheTTL), so that many applications on one repository
// do not each list its references. Without it every resolve lists them.
func WithRefCache(c RefCache, ttl time.Duration) Option {
	return func(a *Activities) {
		a.refCache = c
		if ttl > 0 {
			a.refTTL = ttl
		}
	}
}

// WithTreeGrace sets how long after its last use a checkout is protected
// from Evict (default DefaultTreeGrace). Renderers read a checkout after
// Checkout returns; the grace must outlast the longest such read.
func WithTreeGrace(d time.Duration) Option {
	return func(a *Activities) {
		if d >= 0 {
			a.treeGrace = d
		}
	}
}

// WithNetTimeout sets how long a Git server (SSH or HTTP(S)) may stay
// silent, on dial, handshake or any read, before the operation fails
// (default DefaultNetTimeout).
func WithNetTimeout(d time.Duration) Option {
	return func(a *Activities) {
		if d > 0 {
			a.netTimeout = d
		}
	}
}

// WithShallowFetch says whether a checkout from a mirror that has fetched
// nothing yet asks the server for the commit alone, with depth 1 (on by
// default), before fetching every branch and tag. The mirror then stays
// empty, so short SHAs and commit metadata need a fetch of their own, and
// a commit the server does not serve alone (an old one, on most servers)
// falls back to the full fetch.
func WithShallowFetch(on bool) Option {
	return func(a *Activities) { a.shallow = on }
}

// New checks its dependencies and prepares cacheDir.
func New(cacheDir string, creds CredentialResolver, log *slog.Logger, opts ...Option) (*Activities, error) {
	if cacheDir == "" {
		return nil, errors.New("source: cache dir is required")
	}
	if creds == nil {
		creds = Credentials{}
	}
	if log == nil {
		log = slog.Default()
	}
	a := &Activities{cacheDir: cacheDir, creds: creds, log: log, refTTL: DefaultRefCacheTTL, treeGrace: DefaultTreeGrace, oci: defaultOCILimits(),
		shallow: true}
	for _, o := range opts {
		o(a)
	}
	if c, ok := a.refCache.(RedisRefCache); ok && c.Client == nil {
		return nil, errors.New("source: the ref cache has no Redis client")
	}
	for _, d := range []string{"mirrors", "trees"} {
		if err := os.MkdirAll(filepath.Join(cacheDir, d), 0o755); err != nil {
			return nil, fmt.Errorf("source: prepare cache: %w", err)
		}
	}
	return a, nil
}

// Register registers the activities under their constant names.
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.ResolveRevision, activity.RegisterOptions{Name: ResolveRevisionName})
}

// ResolveInput names a repository and a revision.
type ResolveInput struct {
	RepoURL  string `json:"repoURL"`
	Revision string `json:"revision"`
	// Hard skips the ls-remote cache (a hard refresh).
	Hard bool `json:"hard,omitempty"`
}

// ResolveOutput is the commit the revision points to.
type ResolveOutput struct {
	SHA string `json:"sha"`
	// Ref is the reference that matched (refs/heads/main, HEAD,
	// refs/tags/v1.2.3 for a semver range, ...), empty for a SHA.
	Ref string `json:"ref,omitempty"`
}

const msgResolved = "revision resolved"

// ResolveRevision resolves HEAD, a branch, a tag, a full or abbreviated
// commit SHA, or a semver range over the tags (v1.2.*, ^1.2, >=1.0 <2) to a
// commit SHA. An exact reference wins over a range. For an oci:// source
// it resolves a tag, a semver range over the tags or a digest to the
// manifest's digest (sha256:...), which stands for the SHA from then on.
func (a *Activities) ResolveRevision(ctx context.Context, in ResolveInput) (ResolveOutput, error) {
	repo := redactURL(in.RepoURL)
	if IsOCI(in.RepoURL) {
		var out ResolveOutput
		err := a.retryRefused(ctx, in.RepoURL, func() (err error) {
			out, err = a.resolveOCI(ctx, in.RepoURL, in.Revision)
			return err
		})
		if err != nil {
			return ResolveOutput{}, failure.Activity(fmt.Errorf("resolve %s: %w", in.Revision, err))
		}
		a.log.Debug(msgResolved, "repo", repo, "revision", in.Revision, "sha", out.SHA)
		return out, nil
	}
	refs, err := a.lsRemote(ctx, in.RepoURL, in.Hard)
	if err != nil {
		return ResolveOutput{}, failure.Activity(fmt.Errorf("resolve %s: %w", in.Revision, err))
	}
	sha, ref, err := pickRevision(refs, in.Revision)
	if errors.Is(err, errShortSHA) {
		sha, err = a.resolveShortSHA(ctx, in.RepoURL, in.Revision)
	}
	if err != nil {
		return ResolveOutput{}, failure.Activity(fmt.Errorf("resolve %s in %s: %w", in.Revision, repo, err))
	}
	a.log.Debug(msgResolved, "repo", repo, "revision", in.Revision, "sha", sha)
	return ResolveOutput{SHA: sha, Ref: ref}, nil
}
