package workflows

// This file holds syncs and rollbacks: their admission by update or
// signal, automated sync and self-heal, and the SyncWorkflow child.

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/project"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
)

// busy says why no new operation can start, or "".
func (a *application) busy() error {
	switch {
	case a.deleting != nil:
		return temporal.NewApplicationError("the application is being deleted", ErrTypeDeleting)
	case a.moving != nil:
		return errMoving(*a.moving)
	case a.st.Status.Operation != nil || len(a.pending) > 0 || a.admitting > 0:
		return temporal.NewApplicationError("another operation is already in progress", ErrTypeOperationInProgress)
	}
	return a.skipError()
}

func (a *application) validateSync(_ workflow.Context, req SyncRequest) error {
	if err := a.busy(); err != nil {
		return err
	}
	switch req.Strategy {
	case "", cluster.StrategyHook, cluster.StrategyApply:
	default:
		return temporal.NewApplicationError("strategy must be hook or apply", ErrTypeInvalidSpec, "strategy")
	}
	return nil
}

// admit checks the sync windows and resolves the revision (unless the
// sources are given, as for a rollback), then queues the sync. It runs
// inside update handlers and for signals.
func (a *application) admit(ctx workflow.Context, req SyncRequest, revision string, sources []render.SourceRequest) (string, error) {
	// Validators of updates delivered together may all run before the
	// first handler does, so the handler checks again.
	if err := a.busy(); err != nil {
		return "", err
	}
	a.admitting++
	defer func() { a.admitting-- }()
	if err := a.checkWindow(ctx, true); err != nil {
		return "", err
	}
	pinned := sources != nil || req.Revision != ""
	if sources == nil {
		var err error
		revision, sources, err = a.resolveSources(ctx, a.st.Spec, req.Revision, true)
		if err != nil {
			return "", temporal.NewApplicationError("revision: "+errorMessage(err), unavailableOr(err, ErrTypeRevisionNotFound))
		}
	}
	a.st.SyncSeq++
	id := SyncWorkflowID(a.st.Spec.Project, a.st.Spec.Name, a.st.SyncSeq)
	a.pending = append(a.pending, pendingSync{id: id, req: req, revision: revision, sources: sources, pinned: pinned})
	a.st.Status.Operation = &Operation{SyncID: id, Phase: PhasePending, Initiator: req.Initiator, StartedAt: workflow.Now(ctx)}
	a.wake.SendAsync(true)
	return id, nil
}

// checkWindow returns a SyncWindowDenied error when the project's sync
// windows forbid a sync now.
func (a *application) checkWindow(ctx workflow.Context, manual bool) error {
	d, err := a.window(ctx, manual)
	if err != nil {
		return temporal.NewApplicationError("sync windows: "+errorMessage(err), unavailableOr(err, ErrTypeSyncWindow))
	}
	if !d.Allowed {
		return temporal.NewApplicationError(d.Reason, ErrTypeSyncWindow)
	}
	return nil
}

// unavailableOr is ErrTypeUnavailable when an activity failed because a
// dependency did not answer, else typ.
func unavailableOr(err error, typ string) string {
	if failure.TypeOf(err) == failure.TypeUnreachable {
		return ErrTypeUnavailable
	}
	return typ
}

func (a *application) window(ctx workflow.Context, manual bool) (appspec.WindowDecision, error) {
	if a.project == nil {
		p, err := getProject(ctx, a.st.Spec.Project)
		if err != nil {
			return appspec.WindowDecision{}, err
		}
		a.project = &p
	}
	if len(a.project.SyncWindows) == 0 {
		return appspec.WindowDecision{Allowed: true}, nil
	}
	spec := a.destSpec()
	return syncWindow(ctx, project.WindowInput{Project: *a.project, App: spec.Name, Namespace: spec.Destination.Namespace,
		Server: spec.Destination.Server, Now: workflow.Now(ctx), Manual: manual})
}

// awaitStart waits until the loop has started the SyncWorkflow.
func (a *application) awaitStart(ctx workflow.Context, id string) (SyncAccepted, error) {
	if err := workflow.Await(ctx, func() bool { _, ok := a.started[id]; return ok }); err != nil {
		return SyncAccepted{}, err
	}
	err := a.started[id]
	delete(a.started, id)
	if err != nil {
		return SyncAccepted{}, err
	}
	acc := SyncAccepted{ID: id}
	if op := a.st.Status.Operation; op != nil && op.SyncID == id {
		acc.WaitingFor = op.WaitingFor
	}
	return acc, nil
}

func (a *application) syncUpdate(ctx workflow.Context, req SyncRequest) (SyncAccepted, error) {
	id, err := a.admit(ctx, req, "", nil)
	if err != nil {
		return SyncAccepted{}, err
	}
	return a.awaitStart(ctx, id)
}

// findSync returns a past sync by ID: a recent one, or else the one the
// request carries, if it is one of this app's syncs.
func (a *application) findSync(req RollbackRequest) (SyncSummary, bool) {
	for _, s := range a.st.History {
		if s.ID == req.ID {
			return s, true
		}
	}
	if p := req.Past; p != nil && p.ID == req.ID {
		if n, ok := ParseSyncSeqMoved(p.ID, a.st.Spec.Project, a.st.Spec.Name, a.st.Moves); ok && n <= a.st.SyncSeq {
			return *p, true
		}
	}
	return SyncSummary{}, false
}

func (a *application) validateRollback(_ workflow.Context, req RollbackRequest) error {
	if err := a.busy(); err != nil {
		return err
	}
	past, ok := a.findSync(req)
	switch {
	case !ok:
		return temporal.NewApplicationError("sync "+req.ID+" is not in the application's history", ErrTypeRollback, "id")
	case len(past.Sources) == 0:
		return temporal.NewApplicationError("sync "+req.ID+" did not record its sources", ErrTypeRollback, "id")
	case a.st.Spec.IsAutomated() && !req.Force:
		return temporal.NewApplicationError("rollback is refused while automated sync is on; disable it or use force", ErrTypeRollback, "force")
	}
	return nil
}

func (a *application) rollbackUpdate(ctx workflow.Context, req RollbackRequest) (SyncAccepted, error) {
	id, err := a.admitRollback(ctx, req)
	if err != nil {
		return SyncAccepted{}, err
	}
	return a.awaitStart(ctx, id)
}

// admitRollback queues a sync of exactly a past sync's sources. A forced
// rollback of an automated app holds automated sync back until a new
// revision arrives, or it would undo the rollback at once.
func (a *application) admitRollback(ctx workflow.Context, req RollbackRequest) (string, error) {
	past, _ := a.findSync(req)
	sreq := SyncRequest{Prune: req.Prune, DryRun: req.DryRun, Initiator: req.Initiator}
	id, err := a.admit(ctx, sreq, past.Revision, past.Sources)
	if err != nil {
		return "", err
	}
	if a.st.Spec.IsAutomated() && !req.DryRun {
		a.st.HoldSHA = a.st.Status.SHA
	}
	a.event(ctx, EventNormal, "Rollback", "rollback to "+req.ID+" ("+past.SHA+") as "+id)
	return id, nil
}

// handleSyncSignal is the signal form of the sync update. A signal cannot
// answer, so a refusal becomes an event.
func (a *application) handleSyncSignal(ctx workflow.Context, req SyncRequest) {
	err := a.validateSync(ctx, req)
	if err == nil {
		_, err = a.admit(ctx, req, "", nil)
	}
	if err != nil {
		a.event(ctx, EventWarning, "SyncRefused", errorMessage(err))
	}
}

func (a *application) handleRollbackSignal(ctx workflow.Context, req RollbackRequest) {
	err := a.validateRollback(ctx, req)
	if err == nil {
		_, err = a.admitRollback(ctx, req)
	}
	if err != nil {
		a.event(ctx, EventWarning, "RollbackRefused", errorMessage(err))
	}
}

// selfHealDelay is the wait before self-heal attempt n: 2 s × 3^(n-1),
// capped at 5 min.
func selfHealDelay(n int) time.Duration {
	d := 2 * time.Second
	for i := 1; i < n && d < 5*time.Minute; i++ {
		d *= 3
	}
	return min(d, 5*time.Minute)
}

// autoSync starts a sync when automated sync is on and the app is
// OutOfSync. As in Argo CD, a revision whose sync failed is not retried
// with the same parameters, and without selfHeal a revision already synced
// is not synced again after drift. Self-heal backs off, and sync windows
// can hold an automated sync back until they open.
func (a *application) autoSync(ctx workflow.Context) {
	spec, st := a.st.Spec, a.st.Status
	if !spec.IsAutomated() || st.Sync != appspec.SyncOutOfSync || st.SHA == "" || len(a.pending) > 0 || a.st.Manifests == nil || a.moving != nil {
		return
	}
	key := a.st.Manifests.Key
	if key == a.st.LastFailedKey || st.SHA == a.st.HoldSHA {
		return
	}
	auto := spec.SyncPolicy.Automated
	if auto.Prune && !auto.AllowEmpty && a.st.Manifests.Count == 0 {
		a.event(ctx, EventWarning, "SyncRefused", "automated sync with prune refuses to delete every resource: the render is empty and allowEmpty is off")
		return
	}
	selfHeal := st.SHA == a.st.LastSyncedSHA
	if selfHeal && !auto.SelfHeal {
		return
	}
	now := workflow.Now(ctx)
	if selfHeal {
		next := a.st.SelfHeal.LastAt.Add(selfHealDelay(a.st.SelfHeal.Attempts + 1))
		if a.st.SelfHeal.Attempts > 0 && now.Before(next) {
			a.wakeAt = next
			return
		}
	}
	d, err := a.window(ctx, false)
	if err != nil {
		a.event(ctx, EventWarning, "SyncWindowError", errorMessage(err))
		return
	}
	if !d.Allowed {
		a.event(ctx, EventNormal, "SyncWindowDenied", "automated sync waits: "+d.Reason)
		a.wakeAt = d.NextChange
		return
	}
	if selfHeal {
		a.st.SelfHeal.Attempts++
		a.st.SelfHeal.LastAt = now
	}
	a.st.SyncSeq++
	id := SyncWorkflowID(spec.Project, spec.Name, a.st.SyncSeq)
	p := pendingSync{id: id, req: SyncRequest{Initiator: InitiatorAutomated, Prune: auto.Prune},
		revision: st.Revision, sources: a.st.Sources}
	p.manifests = a.st.Manifests // rendered by this pass, for these sources
	a.runSync(ctx, p)
	delete(a.started, id) // no handler waits for an automated sync
	a.reconcile(ctx)
}

// runSync runs the SyncWorkflow child and records its outcome.
func (a *application) runSync(ctx workflow.Context, p pendingSync) SyncResult {
	a.otherCause = true // the pass after a sync is about its outcome
	spec := a.st.Spec
	start := workflow.Now(ctx)
	op := &Operation{SyncID: p.id, Phase: PhaseRunning, Initiator: p.req.Initiator, StartedAt: start}
	a.st.Status.Operation = op
	a.publish(ctx)
	a.notify(ctx)
	defer func() { a.st.Status.Operation = nil }()

	sha := ""
	if len(p.sources) > 0 {
		sha = p.sources[0].SHA
		for _, s := range p.sources {
			if !s.RefOnly() {
				sha = s.SHA
				break
			}
		}
	}
	msg := a.revisionMessage(sha)
	res := SyncResult{SyncSummary: SyncSummary{ID: p.id, Revision: p.revision, SHA: sha, RevisionMessage: msg, Sources: p.sources,
		Prune: p.req.Prune, Initiator: p.req.Initiator, StartedAt: start}}
	childCtx, cancel := workflow.WithCancel(ctx)
	a.cancelSync = cancel
	defer func() { a.cancelSync = nil; cancel() }()
	// announced: the handler that admitted the sync has its answer.
	announced := false
	if a.dependenciesOn() && len(spec.DependsOn) > 0 && !p.req.DryRun {
		waited, err := a.awaitDependencies(childCtx, op, func() {
			announced = true
			a.started[p.id] = nil
		})
		if err != nil {
			return a.dependsFailed(ctx, p, res, waited, err)
		}
		if announced {
			start = workflow.Now(ctx)
			op.Phase, op.StartedAt, res.StartedAt = PhaseRunning, start, start
			a.publish(ctx)
		}
	}
	childCtx = workflow.WithChildOptions(childCtx, workflow.ChildWorkflowOptions{
		WorkflowID:          p.id,
		WaitForCancellation: true,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			saProject.ValueSet(spec.Project), saApp.ValueSet(spec.Project+"/"+spec.Name)),
		// For the full history's list (the child's start command is
		// matched on replay by its type only: no GetVersion needed).
		Memo: map[string]any{MemoInitiator: p.req.Initiator, MemoRevision: p.revision, MemoSHA: sha, MemoRevisionMessage: msg},
	})
	proj := a.project
	queue := clusterQueue(a.onCluster(ctx, false))
	in := SyncInput{ID: p.id, TaskQueue: queue, Spec: a.destSpec(), Revision: p.revision, SHA: sha, Sources: p.sources, Project: proj,
		DryRun: p.req.DryRun, Initiator: p.req.Initiator, WaitSeconds: a.cfg.SyncTimeoutSeconds, ReportProgress: true, Manifests: p.manifests,
		Operation: cluster.SyncOperation{SyncID: p.id, Prune: p.req.Prune, Resources: p.req.Resources,
			SyncOptions: p.req.SyncOptions, Strategy: p.req.Strategy, DryRun: p.req.DryRun}, Pinned: p.pinned}
	if !p.req.Prune && len(p.req.Resources) == 0 {
		in.PruneSkipped = pruneCandidates(a.st.Status.Resources)
	}
	fut := workflow.ExecuteChildWorkflow(childCtx, SyncWorkflowName, in)
	if err := fut.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
		if !announced {
			a.started[p.id] = temporal.NewApplicationError("start sync: "+errorMessage(err), ErrTypeSyncFailed)
		}
		res.Phase, res.Message, res.FinishedAt = PhaseFailed, "start sync: "+errorMessage(err), workflow.Now(ctx)
		a.record(res)
		return res
	}
	if !announced {
		a.started[p.id] = nil
	}
	var err error
	for done := false; !done; {
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(fut, func(f workflow.Future) { err, done = f.Get(ctx, &res), true })
		sel.AddReceive(a.progress, func(c workflow.ReceiveChannel, _ bool) {
			var pr SyncProgress
			c.Receive(ctx, &pr)
			if pr.SyncID == p.id {
				step := pr.Step
				op.Step, op.StepIndex, op.Steps, op.Resources = &step, pr.StepIndex, pr.Steps, pr.Resources
				op.AwaitingApproval = pr.AwaitingApproval
				if !p.req.DryRun && showApplied(&a.st.Status, pr.Resources) {
					a.publish(ctx)
				}
			}
		})
		sel.Select(ctx)
	}
	if err != nil {
		var app *temporal.ApplicationError
		if errors.As(err, &app) && (app.Type() == ErrTypeSyncFailed || app.Type() == ErrTypeSyncTerminated) && app.HasDetails() {
			_ = app.Details(&res)
		} else {
			res.Phase, res.Message = PhaseFailed, errorMessage(err)
		}
		if res.FinishedAt.IsZero() {
			res.FinishedAt = workflow.Now(ctx)
		}
	}
	res.RevisionMessage = msg // the SyncWorkflow's result does not carry it
	if !p.req.DryRun {
		a.st.LastSyncedSHA = res.SHA
		a.st.LastFailedKey = ""
		if res.Phase != PhaseSucceeded && a.st.Manifests != nil && a.st.Manifests.SHA == res.SHA {
			a.st.LastFailedKey = a.st.Manifests.Key
		}
		if res.Phase == PhaseFailed {
			a.st.LastFailedSHA = res.SHA
		} else {
			a.st.LastFailedSHA = ""
		}
	}
	a.record(res)
	return res
}

// pruneCandidates are the resources of a compare that require pruning,
// at most maxPruneSkipped.
func pruneCandidates(rs []appspec.ResourceStatus) []appspec.ResourceKey {
	var out []appspec.ResourceKey
	for _, r := range rs {
		if r.RequiresPruning && len(out) < maxPruneSkipped {
			out = append(out, r.ResourceKey)
		}
	}
	return out
}

// maxPruneSkipped bounds SyncInput.PruneSkipped: the sync's input stays
// small whatever the repository holds.
const maxPruneSkipped = 100

// showApplied shows in st what a running sync has applied: each applied
// resource is Synced, with the health its apply left it in, and the app's
// sync and health follow. It says whether st changed.
func showApplied(st *AppStatus, applied []cluster.ResourceResult) bool {
	changed := false
	for _, r := range applied {
		switch r.Action {
		case cluster.ActionCreated, cluster.ActionConfigured, cluster.ActionUnchanged:
		default:
			continue
		}
		if r.Hook {
			continue
		}
		for i := range st.Resources {
			rs := &st.Resources[i]
			if rs.ResourceKey != r.ResourceKey {
				continue
			}
			if rs.Status != appspec.SyncSynced || (r.Health != "" && rs.Health != r.Health) {
				rs.Status, changed = appspec.SyncSynced, true
				if r.Health != "" {
					rs.Health, rs.HealthMessage = r.Health, ""
				}
			}
			break
		}
	}
	if !changed {
		return false
	}
	st.Sync, st.Health = appspec.SyncSynced, appspec.HealthHealthy
	for _, rs := range st.Resources {
		if rs.Status != appspec.SyncSynced {
			st.Sync = appspec.SyncOutOfSync
		}
		st.Health = appspec.Worse(st.Health, rs.Health)
	}
	return true
}

// revisionMessage is the known commit subject of sha: the status's, or
// that of a recent sync of the same SHA.
func (a *application) revisionMessage(sha string) string {
	if m := a.st.Status.RevisionMetadata; m != nil && a.st.Status.SHA == sha {
		return m.Message
	}
	for _, h := range a.st.History {
		if h.SHA == sha && h.RevisionMessage != "" {
			return h.RevisionMessage
		}
	}
	return ""
}

func (a *application) record(res SyncResult) {
	sum := res.SyncSummary
	a.st.History = append([]SyncSummary{sum}, a.st.History...)
	if n := historyLimit(a.st.Spec); len(a.st.History) > n {
		a.st.History = a.st.History[:n]
	}
}
