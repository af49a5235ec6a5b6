package workflows

import (
	"slices"

	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/reconcile"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// retryRefreshVersion versions retry.refresh, which re-resolves the target
// before a retry. It is asked only by syncs whose spec sets it, which
// 0.1.0 could not store.
const retryRefreshVersion = "sync-retry-refresh"

// refreshOnRetry says whether the sync's retries move to the target's
// latest commit: the spec's retry.refresh, unless the revision was pinned.
func refreshOnRetry(ctx workflow.Context, in SyncInput) bool {
	p := in.Spec.SyncPolicy
	if p == nil || p.Retry == nil || !p.Retry.Refresh || in.Pinned || in.DryRun {
		return false
	}
	return workflow.GetVersion(ctx, retryRefreshVersion, workflow.DefaultVersion, 1) >= 1
}

// refreshRevision resolves the spec's sources again, as the app's
// reconcile does, and makes the next attempt sync them when a commit
// moved. A failed resolution keeps the commits the sync has.
func (s *syncRun) refreshRevision(ctx workflow.Context) {
	steps := passSteps{ctx: ctx}
	revision, sources, err := reconcile.BuildSources(s.in.Spec, "", func(_ int, src appspec.Source, rev string) (string, error) {
		return steps.Resolve(src, rev, true)
	})
	if err != nil {
		workflow.GetLogger(ctx).Warn(msgRefreshFailed, "error", errorMessage(err))
		return
	}
	if slices.EqualFunc(sources, s.in.Sources, func(a, b render.SourceRequest) bool { return a.SHA == b.SHA }) {
		return
	}
	sha := sources[0].SHA
	for _, src := range sources {
		if !src.RefOnly() {
			sha = src.SHA
			break
		}
	}
	workflow.GetLogger(ctx).Info(msgRefreshMoved, "from", s.in.SHA, "to", sha)
	s.in.Revision, s.in.SHA, s.in.Sources, s.in.Manifests = revision, sha, sources, nil
	s.res.Revision, s.res.SHA, s.res.Sources = revision, sha, sources
}

const (
	msgRefreshFailed = "retry.refresh: cannot resolve the target; retrying the same commit"
	msgRefreshMoved  = "retry.refresh: the target moved; retrying at its latest commit"
)
