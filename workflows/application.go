package workflows

import (
	"errors"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/project"
	"github.com/windlass-cd/windlass/activities/reconcile"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/activities/watch"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
)

// Search attribute keys.
var (
	saProject = temporal.NewSearchAttributeKeyKeyword(SearchAttrProject)
	saApp     = temporal.NewSearchAttributeKeyKeyword(SearchAttrApp)
	saSync    = temporal.NewSearchAttributeKeyKeyword(SearchAttrSync)
	saHealth  = temporal.NewSearchAttributeKeyKeyword(SearchAttrHealth)
	saRev     = temporal.NewSearchAttributeKeyKeyword(SearchAttrRev)
	saCluster = temporal.NewSearchAttributeKeyKeyword(SearchAttrCluster)
	saPolicy  = temporal.NewSearchAttributeKeyKeyword(SearchAttrSyncPolicy)
	saName    = temporal.NewSearchAttributeKeyKeyword(SearchAttrName)
	saNS      = temporal.NewSearchAttributeKeyKeyword(SearchAttrNamespace)
	saRepo    = temporal.NewSearchAttributeKeyKeywordList(SearchAttrRepo)
)

// application is the state and the handlers of one ApplicationWorkflow run.
type application struct {
	cfg AppConfig
	st  AppState
	// project is the app's project as of the last reconcile.
	project *appspec.Project

	refresh, syncSig, rollbackSig, progress workflow.ReceiveChannel
	wake                                    workflow.Channel

	pending   []pendingSync
	started   map[string]error
	admitting int
	hard      bool
	// fresh bypasses the ls-remote cache: a refresh was asked for, as in
	// Argo CD, where a requested refresh skips the revision cache.
	fresh  bool
	passes int
	// timerFired says the last wake-up was the refresh timer: a quiet
	// period in which no drift was reported.
	timerFired bool
	// drifted says a drift refresh arrived since the last pass, and
	// otherCause that something else asked for the next pass (another
	// refresh, a spec change, a sync): a pass that only drift asked for
	// compares with CompareInput.Drift, which lists nothing, unless the
	// last pass that listed (listedAt) is a refresh interval old (drift
	// that never stops would keep the refresh timer from firing).
	drifted, otherCause bool
	listedAt            time.Time
	// wakeAt is the earliest moment the loop must look again (a self-heal
	// backoff or a sync window), zero when none.
	wakeAt     time.Time
	cancelSync workflow.CancelFunc

	deleting  *DeleteRequest
	deleted   bool
	deleteRes DeleteResult
	deleteErr error
	// deleteApproved says approveDeletion let the deletion delete the
	// resources marked Delete=confirm.
	deleteApproved bool

	// publishedSA and publishedMemo are what the last upserts wrote: an
	// upsert that would change nothing is skipped.
	publishedSA   string
	publishedMemo map[string]any
	// unpublished says a pass left its status unpublished: the loop
	// publishes it before it waits, unless a sync that starts in the same
	// workflow task has published it already with its operation (each
	// upsert is a history event and a visibility write).
	unpublished bool
	// passSpec is the spec the last reconcile pass read.
	passSpec appspec.Application
}

// pendingSync is an admitted sync: its revision is resolved.
type pendingSync struct {
	id       string
	req      SyncRequest
	revision string
	sources  []render.SourceRequest
	// manifests, when set, are the sources' rendered manifests: the sync
	// does not render them again.
	manifests *render.ManifestRef
}

// ApplicationWorkflow is the entity workflow of one application.
func ApplicationWorkflow(ctx workflow.Context, in AppInput) error {
	a, err := newApplication(ctx, in)
	if err != nil {
		return err
	}
	return a.run(ctx)
}

func newApplication(ctx workflow.Context, in AppInput) (*application, error) {
	a := &application{
		cfg:         in.Config,
		refresh:     workflow.GetSignalChannel(ctx, SignalRefresh),
		syncSig:     workflow.GetSignalChannel(ctx, SignalSync),
		rollbackSig: workflow.GetSignalChannel(ctx, SignalRollback),
		progress:    workflow.GetSignalChannel(ctx, SignalSyncProgress),
		wake:        workflow.NewBufferedChannel(ctx, 1),
		started:     map[string]error{},
	}
	if in.State != nil {
		a.st = *in.State
		a.hard, a.st.HardRefresh = a.st.HardRefresh, false
	} else {
		a.st = AppState{Spec: in.Spec.Defaulted(), Status: AppStatus{Sync: appspec.SyncUnknown, Health: appspec.HealthUnknown}}
	}
	a.st.Runs++
	queries := []struct {
		name string
		fn   any
	}{
		{QueryStatus, func() (AppView, error) { return a.view(), nil }},
		{QueryResources, func() ([]appspec.ResourceStatus, error) { return a.st.Status.Resources, nil }},
		{QueryHistory, func() (HistoryView, error) { return HistoryView{Recent: a.st.History}, nil }},
		{QueryOperation, func() (*Operation, error) { return a.st.Status.Operation, nil }},
		{QueryManifests, func() (*render.ManifestRef, error) { return a.st.Manifests, nil }},
	}
	for _, q := range queries {
		if err := workflow.SetQueryHandler(ctx, q.name, q.fn); err != nil {
			return nil, err
		}
	}
	updates := []struct {
		name      string
		handler   any
		validator any
	}{
		{UpdateSetSpec, a.setSpec, a.validateSpec},
		{UpdateSync, a.syncUpdate, a.validateSync},
		{UpdateRollback, a.rollbackUpdate, a.validateRollback},
		{UpdateTerminate, a.terminate, a.validateTerminate},
		{UpdateDelete, a.deleteUpdate, a.validateDelete},
		{UpdateApproveDeletion, a.approveDeletion, a.validateApproveDeletion},
	}
	for _, u := range updates {
		err := workflow.SetUpdateHandlerWithOptions(ctx, u.name, u.handler, workflow.UpdateHandlerOptions{Validator: u.validator})
		if err != nil {
			return nil, err
		}
	}
	return a, nil
}

func (a *application) view() AppView {
	return AppView{Spec: a.st.Spec, Status: a.st.Status, History: a.st.History, Refreshes: a.st.Refreshes, Runs: a.st.Runs}
}

// event records a notable event in the status, newest first. A repeat of
// the newest event only refreshes its time.
func (a *application) event(ctx workflow.Context, typ, reason, msg string) {
	now := workflow.Now(ctx)
	ev := a.st.Status.Events
	if len(ev) > 0 && ev[0].Reason == reason && ev[0].Message == msg {
		ev[0].Time = now
		return
	}
	a.st.Status.Events = append([]Event{{Time: now, Type: typ, Reason: reason, Message: msg}}, ev...)
	if len(a.st.Status.Events) > maxEvents {
		a.st.Status.Events = a.st.Status.Events[:maxEvents]
	}
	workflow.GetLogger(ctx).Info(msgEvent, "reason", reason, "message", msg)
}

const (
	msgEvent           = "app event"
	msgReconcileFailed = "reconcile failed"
)

// --- setSpec -------------------------------------------------------------

func (a *application) validateSpec(_ workflow.Context, spec appspec.Application) error {
	if a.deleting != nil {
		return temporal.NewApplicationError("the application is being deleted", ErrTypeDeleting)
	}
	spec = spec.Defaulted()
	if err := spec.Validate(); err != nil {
		var fe *appspec.FieldError
		if errors.As(err, &fe) {
			return temporal.NewApplicationError(err.Error(), ErrTypeInvalidSpec, fe.Field)
		}
		return temporal.NewApplicationError(err.Error(), ErrTypeInvalidSpec)
	}
	if spec.Name != a.st.Spec.Name || spec.Project != a.st.Spec.Project {
		return temporal.NewApplicationError("name and project of an application cannot change", ErrTypeInvalidSpec, "name")
	}
	return nil
}

// setSpec checks the spec against its project, then stores it.
func (a *application) setSpec(ctx workflow.Context, spec appspec.Application) (AppView, error) {
	spec = spec.Defaulted()
	ctx = withLocalSteps(ctx) // the project lookup is a cheap step
	proj, err := getProject(ctx, spec.Project)
	if err != nil {
		return AppView{}, temporal.NewApplicationError("project "+spec.Project+": "+errorMessage(err), ErrTypeNotPermitted, "project")
	}
	if err := proj.CheckApp(spec); err != nil {
		var fe *appspec.FieldError
		field := ""
		if errors.As(err, &fe) {
			field = fe.Field
		}
		return AppView{}, temporal.NewApplicationError(err.Error(), ErrTypeNotPermitted, field)
	}
	a.st.Spec = spec
	a.project = &proj
	a.wake.SendAsync(true)
	return a.view(), nil
}

// --- sync and rollback ----------------------------------------------------

// busy says why no new operation can start, or "".
func (a *application) busy() error {
	switch {
	case a.deleting != nil:
		return temporal.NewApplicationError("the application is being deleted", ErrTypeDeleting)
	case a.st.Status.Operation != nil || len(a.pending) > 0 || a.admitting > 0:
		return temporal.NewApplicationError("another operation is already in progress", ErrTypeOperationInProgress)
	}
	return nil
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
	if sources == nil {
		var err error
		revision, sources, err = a.resolveSources(ctx, a.st.Spec, req.Revision, true)
		if err != nil {
			return "", temporal.NewApplicationError("revision: "+errorMessage(err), unavailableOr(err, ErrTypeRevisionNotFound))
		}
	}
	a.st.SyncSeq++
	id := SyncWorkflowID(a.st.Spec.Project, a.st.Spec.Name, a.st.SyncSeq)
	a.pending = append(a.pending, pendingSync{id: id, req: req, revision: revision, sources: sources})
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
	spec := a.st.Spec
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
	return SyncAccepted{ID: id}, nil
}

func (a *application) syncUpdate(ctx workflow.Context, req SyncRequest) (SyncAccepted, error) {
	id, err := a.admit(ctx, req, "", nil)
	if err != nil {
		return SyncAccepted{}, err
	}
	return a.awaitStart(ctx, id)
}

// findSync returns a recent sync by ID.
func (a *application) findSync(id string) (SyncSummary, bool) {
	for _, s := range a.st.History {
		if s.ID == id {
			return s, true
		}
	}
	return SyncSummary{}, false
}

func (a *application) validateRollback(_ workflow.Context, req RollbackRequest) error {
	if err := a.busy(); err != nil {
		return err
	}
	past, ok := a.findSync(req.ID)
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
	past, _ := a.findSync(req.ID)
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

// --- terminate and delete -------------------------------------------------

func (a *application) validateTerminate(_ workflow.Context, _ TerminateRequest) error {
	if a.cancelSync == nil {
		return temporal.NewApplicationError("no operation is running", ErrTypeNoOperation)
	}
	return nil
}

func (a *application) terminate(ctx workflow.Context, req TerminateRequest) error {
	if a.cancelSync == nil {
		return temporal.NewApplicationError("no operation is running", ErrTypeNoOperation)
	}
	a.cancelSync()
	msg := "operation " + a.st.Status.Operation.SyncID + " terminated"
	if req.Initiator != "" {
		msg += " by " + req.Initiator
	}
	if req.Reason != "" {
		msg += ": " + req.Reason
	}
	a.event(ctx, EventNormal, "OperationTerminated", msg)
	return nil
}

func (a *application) validateDelete(_ workflow.Context, req DeleteRequest) error {
	if a.deleting != nil {
		return temporal.NewApplicationError("the application is already being deleted", ErrTypeDeleting)
	}
	switch req.Cascade {
	case "", cluster.CascadeForeground, cluster.CascadeBackground, cluster.CascadeOrphan:
		return nil
	}
	return temporal.NewApplicationError("cascade must be foreground, background or orphan", ErrTypeInvalidSpec, "cascade")
}

// deleteUpdate stops any operation, lets the loop delete the app's
// resources and waits for the outcome. On success the workflow completes.
func (a *application) deleteUpdate(ctx workflow.Context, req DeleteRequest) (DeleteResult, error) {
	if req.Cascade == "" {
		req.Cascade = cluster.CascadeForeground
	}
	a.deleting, a.deleted, a.deleteApproved = &req, false, false
	if a.cancelSync != nil {
		a.cancelSync()
	}
	a.wake.SendAsync(true)
	awaiting := func() bool { return len(a.st.Status.AwaitingDeletionApproval) > 0 && !a.deleteApproved }
	if err := workflow.Await(ctx, func() bool { return a.deleted || awaiting() }); err != nil {
		return DeleteResult{}, err
	}
	if !a.deleted {
		// The deletion goes on once approveDeletion approves these.
		return DeleteResult{AwaitingApproval: a.st.Status.AwaitingDeletionApproval}, nil
	}
	return a.deleteRes, a.deleteErr
}

// runDelete deletes the app's resources; it reports whether the app is
// gone.
func (a *application) runDelete(ctx workflow.Context) bool {
	req := *a.deleting
	for _, p := range a.pending {
		a.started[p.id] = temporal.NewApplicationError("the application is being deleted", ErrTypeDeleting)
	}
	a.pending = nil
	a.st.Status.Operation = nil
	in := cluster.DeleteAppInput{Target: clusterTarget(a.st.Spec), Cascade: req.Cascade, Manifests: a.st.Manifests}
	out, err := deleteApp(a.onCluster(ctx, false), in)
	if err == nil && len(out.AwaitingApproval) > 0 {
		out, err = a.awaitDeleteApproval(ctx, in, out)
	}
	a.deleteRes, a.deleted = DeleteResult{Resources: out.Resources}, true
	if err != nil {
		a.deleteErr = temporal.NewApplicationError("delete: "+errorMessage(err), ErrTypeDeleting)
		a.event(ctx, EventWarning, "DeleteFailed", errorMessage(err))
		a.deleting = nil
		return false
	}
	a.deleteErr = nil
	if a.cfg.DriftWatch && len(a.st.WatchedKinds) > 0 {
		a.signalWatch(ctx, nil)
	}
	return true
}

// awaitDeleteApproval answers the delete update with the resources that
// wait for approval, waits for approveDeletion, then deletes again with
// the approval; it returns the combined log.
func (a *application) awaitDeleteApproval(ctx workflow.Context, in cluster.DeleteAppInput, first cluster.DeleteAppOutput) (cluster.DeleteAppOutput, error) {
	a.st.Status.AwaitingDeletionApproval = first.AwaitingApproval
	a.event(ctx, EventNormal, "DeletionAwaitsApproval", strconv.Itoa(len(first.AwaitingApproval))+" resources marked Delete=confirm wait for approval")
	a.publish(ctx)
	if err := workflow.Await(ctx, func() bool { return a.deleteApproved }); err != nil {
		return first, err
	}
	a.st.Status.AwaitingDeletionApproval = nil
	in.Approved = true
	out, err := deleteApp(ctx, in)
	kept := slices.DeleteFunc(first.Resources, func(r cluster.ResourceResult) bool {
		return slices.Contains(first.AwaitingApproval, r.ResourceKey)
	})
	out.Resources = append(kept, out.Resources...)
	return out, err
}

// validateApproveDeletion accepts an approval only while a sync's prune
// or the app's deletion waits for one.
func (a *application) validateApproveDeletion(_ workflow.Context, _ ApproveDeletionRequest) error {
	if len(a.st.Status.AwaitingDeletionApproval) > 0 && !a.deleteApproved {
		return nil
	}
	if op := a.st.Status.Operation; op != nil && len(op.AwaitingApproval) > 0 {
		return nil
	}
	return temporal.NewApplicationError("no resource is waiting for deletion approval", ErrTypeNoOperation)
}

// approveDeletion lets the waiting deletion or sync delete the resources
// marked Prune=confirm or Delete=confirm; it answers with their keys.
func (a *application) approveDeletion(ctx workflow.Context, req ApproveDeletionRequest) ([]appspec.ResourceKey, error) {
	if err := a.validateApproveDeletion(ctx, req); err != nil {
		return nil, err
	}
	who := req.Initiator
	if who == "" {
		who = "unknown"
	}
	if keys := a.st.Status.AwaitingDeletionApproval; len(keys) > 0 {
		a.deleteApproved = true
		a.event(ctx, EventNormal, "DeletionApproved", "deletion of "+strconv.Itoa(len(keys))+" resources approved by "+who)
		return keys, nil
	}
	op := a.st.Status.Operation
	keys := op.AwaitingApproval
	if err := workflow.SignalExternalWorkflow(ctx, op.SyncID, "", SignalApproveDeletion, req).Get(ctx, nil); err != nil {
		return nil, err
	}
	if a.st.Status.Operation == op {
		op.AwaitingApproval = nil
	}
	a.event(ctx, EventNormal, "PruneApproved", "pruning of "+strconv.Itoa(len(keys))+" resources approved by "+who)
	return keys, nil
}

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

// --- the loop -------------------------------------------------------------

func (a *application) run(ctx workflow.Context) error {
	ctx = withLocalSteps(ctx) // cheap steps run as local activities
	for _, req := range a.st.QueuedSyncs {
		a.handleSyncSignal(ctx, req)
	}
	for _, req := range a.st.QueuedRollbacks {
		a.handleRollbackSignal(ctx, req)
	}
	a.st.QueuedSyncs, a.st.QueuedRollbacks = nil, nil
	for {
		if a.deleting != nil {
			if a.runDelete(ctx) {
				return workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
			}
		}
		if len(a.pending) == 0 {
			a.reconcile(ctx)
			a.autoSync(ctx)
		}
		for len(a.pending) > 0 && a.deleting == nil {
			p := a.pending[0]
			a.pending = a.pending[1:]
			a.runSync(ctx, p)
			a.reconcile(ctx)
		}
		if a.unpublished {
			a.publish(ctx)
		}
		if a.deleting == nil && a.shouldContinueAsNew(ctx) {
			return a.continueAsNew(ctx)
		}
		if a.deleting == nil {
			a.waitForWork(ctx)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// waitForWork blocks until the refresh timer fires, a signal arrives, or a
// handler queued work.
func (a *application) waitForWork(ctx workflow.Context) {
	a.timerFired = false
	if a.queuedWork(ctx) {
		return
	}
	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	wait := a.refreshInterval(ctx)
	if !a.wakeAt.IsZero() {
		if d := a.wakeAt.Sub(workflow.Now(ctx)); d < wait {
			wait = max(d, time.Second)
		}
		a.wakeAt = time.Time{}
	}
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(workflow.NewTimer(timerCtx, wait), func(workflow.Future) { a.timerFired = true })
	sel.AddReceive(a.refresh, func(c workflow.ReceiveChannel, _ bool) {
		var r RefreshRequest
		c.Receive(ctx, &r)
		a.onRefresh(r)
	})
	sel.AddReceive(a.syncSig, func(c workflow.ReceiveChannel, _ bool) {
		var r SyncRequest
		c.Receive(ctx, &r)
		a.handleSyncSignal(ctx, r)
	})
	sel.AddReceive(a.rollbackSig, func(c workflow.ReceiveChannel, _ bool) {
		var r RollbackRequest
		c.Receive(ctx, &r)
		a.handleRollbackSignal(ctx, r)
	})
	sel.AddReceive(a.progress, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
	sel.AddReceive(a.wake, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); a.otherCause = true })
	sel.Select(ctx)
	// Take every refresh that queued up meanwhile: one pass serves them all.
	for {
		var r RefreshRequest
		if !a.refresh.ReceiveAsync(&r) {
			break
		}
		a.onRefresh(r)
	}
}

// queuedWork takes the work that arrived while the loop was busy, so that
// the loop goes on without starting (and cancelling) a timer: every
// refresh, or one sync or rollback signal, as the wait would take one. A
// wake-up is stale unless the spec changed after the last pass read it:
// a sync that woke the loop has run by now, and a deletion is handled
// before the loop waits.
func (a *application) queuedWork(ctx workflow.Context) bool {
	queued := a.wake.ReceiveAsync(nil) && !sameJSON(a.st.Spec, a.passSpec)
	a.otherCause = a.otherCause || queued
	for {
		var r RefreshRequest
		if !a.refresh.ReceiveAsync(&r) {
			break
		}
		a.onRefresh(r)
		queued = true
	}
	if queued {
		return true
	}
	var sr SyncRequest
	if a.syncSig.ReceiveAsync(&sr) {
		a.handleSyncSignal(ctx, sr)
		return true
	}
	var rr RollbackRequest
	if a.rollbackSig.ReceiveAsync(&rr) {
		a.handleRollbackSignal(ctx, rr)
		return true
	}
	for a.progress.ReceiveAsync(nil) { // a late report of a finished sync
	}
	return false
}

func (a *application) onRefresh(r RefreshRequest) {
	a.st.Refreshes++
	a.hard = a.hard || r.Hard
	if r.Drift {
		a.drifted = true
	} else {
		a.otherCause = true
	}
	if !r.Live || r.Hard {
		a.fresh = true
	}
}

// refreshInterval is the app's interval plus up to 10 % jitter, derived
// deterministically from the workflow ID and the pass number so that apps
// spread out without randomness in workflow code.
func (a *application) refreshInterval(ctx workflow.Context) time.Duration {
	base := a.refreshBase()
	h := fnv.New32a()
	_, _ = h.Write([]byte(workflow.GetInfo(ctx).WorkflowExecution.ID))
	_, _ = h.Write([]byte{byte(a.passes), byte(a.passes >> 8)})
	jitter := time.Duration(uint64(base/10) * uint64(h.Sum32()%1000) / 1000)
	return base + jitter
}

// refreshBase is the app's refresh interval, without jitter.
func (a *application) refreshBase() time.Duration {
	secs := a.st.Spec.RefreshSeconds
	if secs <= 0 {
		secs = a.cfg.RefreshSeconds
	}
	if secs <= 0 {
		secs = 180
	}
	return time.Duration(secs) * time.Second
}

// resolveSources resolves every source's revision; override replaces the
// revision of the first source that renders. It returns the revision shown
// for the app.
func (a *application) resolveSources(ctx workflow.Context, spec appspec.Application, override string, hard bool) (string, []render.SourceRequest, error) {
	steps := passSteps{ctx: ctx}
	return reconcile.BuildSources(spec, override, func(_ int, s appspec.Source, rev string) (string, error) {
		return steps.Resolve(s, rev, hard)
	})
}

// passSteps runs a pass's steps as activities: the cheap ones from ctx
// (local, withLocalSteps), the compare from cctx, on the cluster's queue.
type passSteps struct{ ctx, cctx workflow.Context }

func (s passSteps) Project(name string) (appspec.Project, error) { return getProject(s.ctx, name) }

func (s passSteps) Resolve(src appspec.Source, rev string, fresh bool) (string, error) {
	if src.Chart != "" {
		// A chart from a Helm repository: the "SHA" is its version.
		v, err := resolveChart(s.ctx, render.ResolveChartInput{RepoURL: src.RepoURL, Chart: src.Chart, Version: rev})
		return v.Version, err
	}
	r, err := resolveRevision(s.ctx, source.ResolveInput{RepoURL: src.RepoURL, Revision: rev, Hard: fresh})
	return r.SHA, err
}

func (s passSteps) Render(req render.Request, hard bool) (render.ManifestRef, error) {
	return renderManifests(s.ctx, render.RenderInput{Request: req, Hard: hard})
}

func (s passSteps) Compare(in cluster.CompareInput) (cluster.CompareOutput, error) {
	return compareState(s.cctx, in, localCompare(s.cctx))
}

// reconcile checks the project, resolves, renders and compares, then
// publishes the status. Errors make the status Unknown with the message;
// they never fail the workflow.
func (a *application) reconcile(ctx workflow.Context) {
	a.passes++
	hard, fresh := a.hard, a.hard || a.fresh
	now := workflow.Now(ctx)
	drift := a.drifted && !a.otherCause && !a.timerFired && !hard && now.Sub(a.listedAt) < a.refreshBase()
	a.hard, a.fresh, a.drifted, a.otherCause = false, false, false, false
	if !drift {
		a.listedAt = now
	}
	spec := a.st.Spec
	a.passSpec = spec
	st := &a.st.Status
	st.ReconciledAt = now
	st.Revision = spec.AllSources()[0].Revision()
	defer func() { a.unpublished = true }()
	// Replay-safe: the SDK's workflow metrics handler drops what a replay
	// records. No command, so no version marker.
	defer func(start time.Time) {
		workflow.GetMetricsHandler(ctx).Timer(MetricReconcileDuration).Record(workflow.Now(ctx).Sub(start))
	}(st.ReconciledAt)

	// The quick pass, unless a hard refresh asks for a render, runs the
	// steps it can; the pass runs the rest itself, with the same code.
	in := reconcile.Input{App: spec, Fresh: fresh, Hard: hard, Drift: drift, Last: a.st.Manifests}
	cctx := a.onCluster(ctx, hard)
	var p reconcile.Pass
	if !hard {
		p = a.quickPass(ctx, cctx, in)
	}
	err := reconcile.Run(passSteps{ctx: ctx, cctx: cctx}, in, &p)
	if p.Project != nil {
		a.project = p.Project
	}
	if err != nil {
		a.unknown(ctx, p.Next.String(), err)
		return
	}
	ref, cmp, sources := *p.Manifests, *p.Compare, p.Sources
	if ref.SHA != st.SHA {
		a.st.SelfHeal = SelfHealState{}
	}
	// A commit's metadata, once known, stays while the SHA does: a
	// worker that has not read the commit renders without it.
	if m := ref.RevisionMetadata; m != nil || ref.SHA != st.SHA {
		st.RevisionMetadata = m
	}
	st.Revision, st.SHA, st.Sync, st.Health, st.Resources, st.Message = p.Revision, ref.SHA, cmp.Sync, cmp.Health, cmp.Resources, ""
	st.OmittedResources, st.ResourcesRef = cmp.Omitted, cmp.ResourcesRef
	a.st.Manifests, a.st.Sources = &ref, sources
	a.reportKinds(ctx)
	if a.timerFired && st.Sync == appspec.SyncSynced {
		a.st.SelfHeal = SelfHealState{} // quiet for a whole interval: drift is over
	}
}

// quickPass runs the pass's cheap steps as one local activity
// (reconcile.QuickPass) and returns how far it got. A quick pass that
// fails as a whole (it is not retried), or whose answer is not whole,
// answers for no step.
func (a *application) quickPass(ctx, cctx workflow.Context, in reconcile.Input) reconcile.Pass {
	var p reconcile.Pass
	qin := reconcile.QuickInput{Input: in, Compare: localCompare(cctx)}
	if err := workflow.ExecuteLocalActivity(quickPassOptions(ctx), reconcile.QuickPassName, qin).Get(ctx, &p); err != nil {
		workflow.GetLogger(ctx).Warn(msgQuickPassFailed, "error", errorMessage(err))
		return reconcile.Pass{}
	}
	if !p.Valid(in) {
		return reconcile.Pass{}
	}
	return p
}

const msgQuickPassFailed = "quick pass failed; the pass runs its steps one by one"

// localCompare says whether a pass's compare, started from ctx, runs as a
// local activity: when the cluster's activities run on the workflow's own
// queue (a worker of that queue reaches the cluster, as for a sync's
// plan). Every pass compares, so this saves an activity task and a
// workflow task per pass: a timer's pass that finds nothing changed is
// one workflow task.
func localCompare(ctx workflow.Context) bool {
	return clusterQueue(ctx) == ""
}

func (a *application) unknown(ctx workflow.Context, step string, err error) {
	st := &a.st.Status
	st.Sync, st.Health = appspec.SyncUnknown, appspec.HealthUnknown
	st.Message = step + ": " + errorMessage(err)
	workflow.GetLogger(ctx).Warn(msgReconcileFailed, "step", step, "error", st.Message)
}

// reportKinds tells the cluster watch which kinds the app manages when
// that set has changed. A failed signal is retried on the next pass.
func (a *application) reportKinds(ctx workflow.Context) {
	if !a.cfg.DriftWatch {
		return
	}
	var kinds []watch.GroupKind
	for _, r := range a.st.Status.Resources {
		if k := (watch.GroupKind{Group: r.Group, Kind: r.Kind}); !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	kinds = watchKinds([]WatchRequest{{Kinds: kinds}})
	if slices.Equal(kinds, a.st.WatchedKinds) {
		return
	}
	a.signalWatchAsync(ctx, kinds)
}

// signalWatchAsync tells the cluster watch the app's kinds without
// waiting for the signal to land, so the pass (and an automated sync)
// goes on in the same workflow task. The kinds count as watched at once;
// a signal that fails restores the previous kinds, so that the next pass
// sends them again.
func (a *application) signalWatchAsync(ctx workflow.Context, kinds []watch.GroupKind) {
	f := a.sendWatch(ctx, kinds)
	prev := a.st.WatchedKinds
	a.st.WatchedKinds = kinds
	workflow.Go(ctx, func(c workflow.Context) {
		if err := f.Get(c, nil); err != nil {
			workflow.GetLogger(c).Warn(msgWatchSignal, "error", errorMessage(err))
			if slices.Equal(a.st.WatchedKinds, kinds) {
				a.st.WatchedKinds = prev
			}
		}
	})
}

func (a *application) signalWatch(ctx workflow.Context, kinds []watch.GroupKind) {
	if err := a.sendWatch(ctx, kinds).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn(msgWatchSignal, "error", errorMessage(err))
		return
	}
	a.st.WatchedKinds = kinds
}

// sendWatch signals the cluster watch of the app's destination that the
// app manages kinds (none: it is gone).
func (a *application) sendWatch(ctx workflow.Context, kinds []watch.GroupKind) workflow.Future {
	spec := a.st.Spec
	req := WatchRequest{App: spec.Project + "/" + spec.Name, Kinds: kinds}
	return workflow.SignalExternalWorkflow(ctx, ClusterWatchWorkflowID(spec.Destination.Server), "", SignalWatch, req)
}

const msgWatchSignal = "cannot reach the cluster watch"

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
	if !spec.IsAutomated() || st.Sync != appspec.SyncOutOfSync || st.SHA == "" || len(a.pending) > 0 || a.st.Manifests == nil {
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

// onCluster returns ctx with the destination cluster's task queue for
// its cluster activities (withClusterQueue). The queue is resolved by an
// activity when unknown, older than placementTTL, for another server, or
// when refresh is set; a failed resolution keeps the last queue of the
// same server (none: the default queue) and is retried on the next call.
func (a *application) onCluster(ctx workflow.Context, refresh bool) workflow.Context {
	server := a.st.Spec.Destination.Server
	p := a.st.Placement
	if p != nil && p.Server != server {
		p = nil
	}
	now := workflow.Now(ctx)
	if p == nil || refresh || now.Sub(p.ResolvedAt) >= placementTTL {
		q, err := clusterTaskQueue(ctx, server)
		if err != nil {
			workflow.GetLogger(ctx).Warn(msgPlacementFailed, "server", server, "error", errorMessage(err))
		} else {
			p = &Placement{Server: server, TaskQueue: q, ResolvedAt: now}
		}
		a.st.Placement = p
	}
	if p == nil {
		return ctx
	}
	return withClusterQueue(ctx, p.TaskQueue)
}

const (
	// placementTTL is how long a resolved task queue is used before it is
	// asked for again: a changed cluster mapping applies within it (or at
	// once with a hard refresh).
	placementTTL       = 10 * time.Minute
	msgPlacementFailed = "cannot resolve the cluster's task queue; using the last known"
)

// runSync runs the SyncWorkflow child and records its outcome.
func (a *application) runSync(ctx workflow.Context, p pendingSync) SyncResult {
	a.otherCause = true // the pass after a sync is about its outcome
	spec := a.st.Spec
	start := workflow.Now(ctx)
	op := &Operation{SyncID: p.id, Phase: PhaseRunning, Initiator: p.req.Initiator, StartedAt: start}
	a.st.Status.Operation = op
	a.publish(ctx)
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
	in := SyncInput{ID: p.id, TaskQueue: queue, Spec: spec, Revision: p.revision, SHA: sha, Sources: p.sources, Project: proj,
		DryRun: p.req.DryRun, Initiator: p.req.Initiator, WaitSeconds: a.cfg.SyncTimeoutSeconds, ReportProgress: true, Manifests: p.manifests,
		Operation: cluster.SyncOperation{SyncID: p.id, Prune: p.req.Prune, Resources: p.req.Resources,
			SyncOptions: p.req.SyncOptions, Strategy: p.req.Strategy, DryRun: p.req.DryRun}}
	if !p.req.Prune && len(p.req.Resources) == 0 {
		in.PruneSkipped = pruneCandidates(a.st.Status.Resources)
	}
	fut := workflow.ExecuteChildWorkflow(childCtx, SyncWorkflowName, in)
	if err := fut.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
		a.started[p.id] = temporal.NewApplicationError("start sync: "+errorMessage(err), ErrTypeSyncFailed)
		res.Phase, res.Message, res.FinishedAt = PhaseFailed, "start sync: "+errorMessage(err), workflow.Now(ctx)
		a.record(res)
		return res
	}
	a.started[p.id] = nil
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
	if len(a.st.History) > maxHistory {
		a.st.History = a.st.History[:maxHistory]
	}
}

// publish writes the status into search attributes and the memo, so that
// listing apps needs no query per app.
func (a *application) publish(ctx workflow.Context) {
	a.unpublished = false
	spec, st := a.st.Spec, a.st.Status
	sa := []string{spec.Project, string(st.Sync), string(st.Health), st.SHA, spec.Destination.Server, syncPolicyLabel(spec),
		spec.Name, spec.Destination.Namespace, strings.Join(repoKeys(spec), "\n")}
	if saKey := strings.Join(sa, "\x00"); saKey != a.publishedSA {
		a.publishedSA = saKey
		_ = workflow.UpsertTypedSearchAttributes(ctx,
			saProject.ValueSet(spec.Project),
			saApp.ValueSet(spec.Project+"/"+spec.Name),
			saSync.ValueSet(string(st.Sync)),
			saHealth.ValueSet(string(st.Health)),
			saRev.ValueSet(st.SHA),
			saCluster.ValueSet(spec.Destination.Server),
			saPolicy.ValueSet(syncPolicyLabel(spec)),
			saName.ValueSet(spec.Name),
			saNS.ValueSet(spec.Destination.Namespace),
			saRepo.ValueSet(repoKeys(spec)),
		)
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
	// The memo's content is not part of the replay check (only the
	// command's type is), so new fields need no GetVersion.
	if !sameJSON(memo, a.publishedMemo) {
		a.publishedMemo = memo
		_ = workflow.UpsertMemo(ctx, memo)
	}
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

func (a *application) shouldContinueAsNew(ctx workflow.Context) bool {
	if a.st.Status.Operation != nil || len(a.pending) > 0 || a.admitting > 0 {
		return false
	}
	info := workflow.GetInfo(ctx)
	limit := a.cfg.HistoryThreshold
	if limit <= 0 {
		limit = 10000
	}
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= limit
}

// continueAsNew waits for the handlers, drains the signals and carries the
// whole state into a new run. Sync and rollback signals that arrived meanwhile
// are carried too and handled first by the next run.
func (a *application) continueAsNew(ctx workflow.Context) error {
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	for {
		var r RefreshRequest
		if !a.refresh.ReceiveAsync(&r) {
			break
		}
		a.onRefresh(r)
	}
	for {
		var r SyncRequest
		if !a.syncSig.ReceiveAsync(&r) {
			break
		}
		a.st.QueuedSyncs = append(a.st.QueuedSyncs, r)
	}
	for {
		var r RollbackRequest
		if !a.rollbackSig.ReceiveAsync(&r) {
			break
		}
		a.st.QueuedRollbacks = append(a.st.QueuedRollbacks, r)
	}
	for a.progress.ReceiveAsync(nil) {
	}
	st := a.st
	st.HardRefresh = a.hard
	return workflow.NewContinueAsNewError(ctx, ApplicationWorkflowName, AppInput{Spec: st.Spec, Config: a.cfg, State: &st})
}
