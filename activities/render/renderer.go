package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/failure"
)

// Activity names: wire contracts, never rename.
const RenderName = "render.Render"

// Errors that retrying cannot fix.
var (
	ErrPathNotFound   = failure.Permanent("PathNotFound", "path not found in repository")
	ErrBadPath        = failure.Permanent("BadPath", "bad repository path")
	ErrNotImplemented = failure.Permanent("NotImplemented", "not implemented")
)

// Checkouter gives a read-only directory holding a commit's tree.
type Checkouter interface {
	Checkout(ctx context.Context, repoURL, sha string) (string, error)
}

// Renderer renders sources and serves rendered manifests from the cache.
type Renderer struct {
	store Store
	git   Checkouter
	log   *slog.Logger
}

// NewRenderer checks its dependencies.
func NewRenderer(store Store, git Checkouter, log *slog.Logger) (*Renderer, error) {
	if store == nil || git == nil {
		return nil, errors.New("render: store and checkouter are required")
	}
	if log == nil {
		log = slog.Default()
	}
	return &Renderer{store: store, git: git, log: log}, nil
}

const (
	msgCacheHit  = "manifest cache hit"
	msgRendered  = "manifests rendered"
	msgCacheLost = "manifest cache entry lost, rendering again"
)

// Render renders req (or finds it in the cache) and returns its ref.
func (r *Renderer) Render(ctx context.Context, req Request, hard bool) (ManifestRef, error) {
	key := req.Key()
	if !hard {
		if b, err := r.store.Get(ctx, key); err == nil {
			var objs []json.RawMessage
			if err := json.Unmarshal(b, &objs); err == nil {
				r.log.Debug(msgCacheHit, "key", key)
				return ManifestRef{Key: key, SHA: req.SHA, Count: len(objs), Digest: digest(b), Request: req}, nil
			}
		} else if !errors.Is(err, ErrCacheMiss) {
			return ManifestRef{}, fmt.Errorf("manifest cache: %w", err)
		}
	}
	objs, b, err := r.renderFresh(ctx, req)
	if err != nil {
		return ManifestRef{}, err
	}
	if err := r.store.Set(ctx, key, b, CacheTTL); err != nil {
		return ManifestRef{}, fmt.Errorf("manifest cache: %w", err)
	}
	r.log.Info(msgRendered, "repo", req.RepoURL, "sha", req.SHA, "path", req.Path, "objects", len(objs))
	return ManifestRef{Key: key, SHA: req.SHA, Count: len(objs), Digest: digest(b), Request: req}, nil
}

// Load returns the manifests ref points at, rendering again if the cache
// has lost them. The result is fresh: callers may modify it.
func (r *Renderer) Load(ctx context.Context, ref ManifestRef) ([]*unstructured.Unstructured, error) {
	b, err := r.store.Get(ctx, ref.Key)
	switch {
	case errors.Is(err, ErrCacheMiss):
		r.log.Info(msgCacheLost, "key", ref.Key)
		objs, fresh, err := r.renderFresh(ctx, ref.Request)
		if err != nil {
			return nil, err
		}
		if err := r.store.Set(ctx, ref.Key, fresh, CacheTTL); err != nil {
			return nil, fmt.Errorf("manifest cache: %w", err)
		}
		return objs, nil
	case err != nil:
		return nil, fmt.Errorf("manifest cache: %w", err)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("manifest cache entry %s: %w", ref.Key, err)
	}
	objs := make([]*unstructured.Unstructured, len(raw))
	for i := range raw {
		objs[i] = &unstructured.Unstructured{}
		if err := objs[i].UnmarshalJSON(raw[i]); err != nil {
			return nil, fmt.Errorf("manifest cache entry %s: %w", ref.Key, err)
		}
	}
	return objs, nil
}

func (r *Renderer) renderFresh(ctx context.Context, req Request) ([]*unstructured.Unstructured, []byte, error) {
	root, err := r.git.Checkout(ctx, req.RepoURL, req.SHA)
	if err != nil {
		return nil, nil, fmt.Errorf("render %s@%s: %w", req.Path, req.SHA, err)
	}
	dir, err := appDir(root, req.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("render %s@%s: %w", req.Path, req.SHA, err)
	}
	if tool := detectTool(dir); tool != "directory" {
		return nil, nil, fmt.Errorf("render %s@%s: %w: the %s tool is not built yet (only plain YAML/JSON directories are)", req.Path, req.SHA, ErrNotImplemented, tool)
	}
	objs, err := renderDirectory(dir, req.Directory)
	if err != nil {
		return nil, nil, fmt.Errorf("render %s@%s: %w", req.Path, req.SHA, err)
	}
	b, err := json.Marshal(objs)
	if err != nil {
		return nil, nil, err
	}
	return objs, b, nil
}

// Activities exposes the Renderer as Temporal activities.
type Activities struct{ r *Renderer }

// New wraps a Renderer.
func New(r *Renderer) (*Activities, error) {
	if r == nil {
		return nil, errors.New("render: renderer is required")
	}
	return &Activities{r: r}, nil
}

// Register registers the activities under their constant names.
func (a *Activities) Register(reg worker.ActivityRegistry) {
	reg.RegisterActivityWithOptions(a.Render, activity.RegisterOptions{Name: RenderName})
}

// Render renders the source, stores the manifests in the cache and returns
// a small reference to them.
func (a *Activities) Render(ctx context.Context, in RenderInput) (ManifestRef, error) {
	ref, err := a.r.Render(ctx, in.Request, in.Hard)
	return ref, failure.Activity(err)
}
