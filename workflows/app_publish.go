package workflows

// This file holds publishing the app's status in search attributes and
// the memo.

import (
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/watch"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// repoKeys are the app's normalised repository URLs, in source order.
func repoKeys(spec appspec.Application) []string {
	var out []string
	for _, src := range spec.AllSources() {
		if k := appspec.NormalizeRepoURL(src.RepoURL); k != "" && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// publish writes the status into search attributes and the memo, so that
// listing apps needs no query per app.
func (a *application) publish(ctx workflow.Context) {
	a.unpublished = false
	spec, st := a.destSpec(), a.st.Status
	parent := ""
	if spec.ManagedBy != nil {
		parent = spec.ManagedBy.App
	}
	sa := []string{spec.Project, string(st.Sync), string(st.Health), st.SHA, spec.Destination.Server, syncPolicyLabel(spec),
		spec.Name, spec.Destination.Namespace, strings.Join(repoKeys(spec), "\n"), parent}
	if a.metadataOn() {
		sa = append(sa, labelsKey(spec.Labels), strings.Join(dependsOnKeys(spec), "\n"))
	}
	if saKey := strings.Join(sa, "\x00"); saKey != a.publishedSA {
		a.publishedSA = saKey
		updates := []temporal.SearchAttributeUpdate{
			saProject.ValueSet(spec.Project),
			saApp.ValueSet(spec.Project + "/" + spec.Name),
			saSync.ValueSet(string(st.Sync)),
			saHealth.ValueSet(string(st.Health)),
			saRev.ValueSet(st.SHA),
			saCluster.ValueSet(spec.Destination.Server),
			saPolicy.ValueSet(syncPolicyLabel(spec)),
			saName.ValueSet(spec.Name),
			saNS.ValueSet(spec.Destination.Namespace),
			saRepo.ValueSet(repoKeys(spec)),
		}
		if a.metadataOn() {
			updates = append(updates, labelsAttr(spec.Labels), dependsOnAttr(spec))
		}
		// Only an app with a parent has (or had) the attribute, so the
		// commands of apps without one are those 0.1.0 wrote.
		switch {
		case parent != "":
			updates = append(updates, saParent.ValueSet(parent))
		case a.parentPublished:
			updates = append(updates, saParent.ValueUnset())
		}
		a.parentPublished = parent != ""
		_ = workflow.UpsertTypedSearchAttributes(ctx, updates...)
	}
	op := ""
	if st.Operation != nil {
		op = st.Operation.Phase
	}
	memo := map[string]any{"resources": len(st.Resources), "operation": op, "message": st.Message}
	if len(a.st.History) > 0 {
		last := a.st.History[0]
		memo[MemoLastSyncedAt], memo[MemoLastSyncPhase] = last.FinishedAt, last.Phase
	}
	if m := st.RevisionMetadata; m != nil {
		memo[MemoRevisionMessage] = m.Message
	} else {
		memo[MemoRevisionMessage] = ""
	}
	// The self-heal sweep leaves out an app refreshed as often as it
	// sweeps. Only on this release's path: the interval can change alone,
	// which would upsert the memo where 0.1.0 did not.
	if a.metadataOn() {
		memo[MemoRefreshSeconds] = int64(a.refreshBase() / time.Second)
	}
	// The memo's content is not part of the replay check (only the
	// command's type is), so new fields need no GetVersion.
	if !sameJSON(memo, a.publishedMemo) {
		a.publishedMemo = memo
		_ = workflow.UpsertMemo(ctx, memo)
	}
	a.notifyParent(ctx)
}

// notifyParent refreshes the parent of an app declared in another app's
// manifests (app of apps) when its sync, health or operation changes, so
// that the parent's status follows its children's. Apps without a parent,
// which is all that 0.1.0 ran, issue no command here.
func (a *application) notifyParent(ctx workflow.Context) {
	mb := a.st.Spec.ManagedBy
	if mb == nil {
		return
	}
	st := a.st.Status
	key := string(st.Sync) + "/" + string(st.Health)
	if st.Operation != nil {
		key += "/" + st.Operation.Phase
	}
	if key == a.parentNotified {
		return
	}
	a.parentNotified = key
	proj, name, ok := strings.Cut(mb.App, "/")
	if !ok {
		return
	}
	// Not awaited: a parent that is gone fails the signal, and nothing
	// is to be done about it.
	workflow.SignalExternalWorkflow(ctx, AppWorkflowID(proj, name), "", SignalRefresh,
		RefreshRequest{Reason: "child " + a.st.Spec.Project + "/" + a.st.Spec.Name + " is " + key, Live: true})
}

// Memo fields the API's lists show: an app's latest sync, and a
// SyncWorkflow's initiator, revision and SHA; both carry the commit
// subject of their SHA when known.
const (
	MemoLastSyncedAt    = "lastSyncedAt"
	MemoLastSyncPhase   = "lastSyncPhase"
	MemoInitiator       = "initiator"
	MemoRevision        = "revision"
	MemoSHA             = "sha"
	MemoRevisionMessage = "revisionMessage"
	// MemoRefreshSeconds is the app's refresh interval, without jitter.
	MemoRefreshSeconds = watch.MemoRefreshSeconds
)

// Values of the WindlassSyncPolicy search attribute.
const (
	PolicyManual    = "manual"
	PolicyAutomated = "automated"
	PolicySelfHeal  = "selfHeal"
)

func syncPolicyLabel(spec appspec.Application) string {
	switch {
	case !spec.IsAutomated():
		return PolicyManual
	case spec.SyncPolicy.Automated.SelfHeal:
		return PolicySelfHeal
	}
	return PolicyAutomated
}
