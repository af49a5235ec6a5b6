package workflows

import (
	"errors"
	"hash/fnv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
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
	saParent  = temporal.NewSearchAttributeKeyKeyword(SearchAttrParent)
)

// application is the state and the handlers of one ApplicationWorkflow run.
// AppState is what a run carries into the next; the rest is the run's own,
// grouped by the part of the workflow that uses it.
type application struct {
	cfg AppConfig
	st  AppState
	// project is the app's project as of the last reconcile.
	project *appspec.Project

	refresh, syncSig, rollbackSig, progress workflow.ReceiveChannel
	wake                                    workflow.Channel

	loopState
	syncState
	deletion
	move
	published
	notifying

	// v020 is the run's changeApp020 version, asked once at its start.
	v020 workflow.Version
	// refreshQueued says a refresh annotation asked for a pass.
	refreshQueued bool
}

// loopState is what the loop knows about the next pass.
type loopState struct {
	hard bool
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
	wakeAt time.Time
	// passSpec is the spec the last reconcile pass read.
	passSpec appspec.Application
	// destErr says the last placement found no cluster of the
	// destination's name.
	destErr error
}

// syncState holds the syncs admitted and running.
type syncState struct {
	pending []pendingSync
	// started answers the handler that admitted a sync: nil once its
	// child started, else why it did not.
	started    map[string]error
	admitting  int
	cancelSync workflow.CancelFunc
}

// deletion is the app's deletion, once asked for.
type deletion struct {
	deleting  *DeleteRequest
	deleted   bool
	deleteRes DeleteResult
	deleteErr error
	// deleteApproved says approveDeletion let the deletion delete the
	// resources marked Delete=confirm.
	deleteApproved bool
}

// published is what the last upserts wrote: an upsert that would change
// nothing is skipped.
type published struct {
	publishedSA string
	// parentPublished: publish set SearchAttrParent in this run.
	parentPublished bool
	// parentNotified is the status last told to the parent (notifyParent).
	parentNotified string
	publishedMemo  map[string]any
	// unpublished says a pass left its status unpublished: the loop
	// publishes it before it waits, unless a sync that starts in the same
	// workflow task has published it already with its operation (each
	// upsert is a history event and a visibility write).
	unpublished bool
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
	// pinned: the revision was chosen (a rollback, an explicit revision).
	pinned bool
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
		syncState:   syncState{started: map[string]error{}},
	}
	if in.State != nil {
		a.st = *in.State
		a.hard, a.st.HardRefresh = a.st.HardRefresh, false
	} else {
		a.st = AppState{Spec: in.Spec.Defaulted(), Status: AppStatus{Sync: appspec.SyncUnknown, Health: appspec.HealthUnknown}}
	}
	a.v020 = workflow.GetVersion(ctx, changeApp020, workflow.DefaultVersion, 1)
	if in.State == nil && a.metadataOn() {
		a.st.Spec = a.st.Spec.WithoutRefreshAnnotation() // the first pass refreshes anyway
	}
	a.st.Runs++
	queries := []struct {
		name string
		fn   any
	}{
		{QueryStatus, func() (AppView, error) { return a.view(), nil }},
		{QueryResources, func() ([]appspec.ResourceStatus, error) { return a.st.Status.Resources, nil }},
		{QueryHistory, func() (HistoryView, error) { return HistoryView{Recent: a.st.History, Moves: a.st.Moves}, nil }},
		{QueryOperation, func() (*Operation, error) { return a.st.Status.Operation, nil }},
		{QueryManifests, func() (*render.ManifestRef, error) { return a.st.Manifests, nil }},
		{QueryNotifications, func() ([]NotificationRecord, error) { return a.st.Notifications, nil }},
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
		{UpdateRunAction, a.runAction, a.validateAction},
		{UpdateMove, a.moveUpdate, a.validateMove},
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
	return AppView{Spec: a.st.Spec, Status: a.st.Status, History: a.st.History, Refreshes: a.st.Refreshes, Runs: a.st.Runs,
		Moves: a.st.Moves, MovedTo: a.st.MovedTo}
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

func (a *application) validateSpec(_ workflow.Context, spec appspec.Application) error {
	if a.deleting != nil {
		return temporal.NewApplicationError("the application is being deleted", ErrTypeDeleting)
	}
	if a.moving != nil {
		return errMoving(*a.moving)
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
	proj, err := a.checkProject(ctx, spec)
	if err != nil {
		return AppView{}, err
	}
	a.st.Spec = a.takeRefreshAnnotation(ctx, spec)
	a.project = &proj
	a.wake.SendAsync(true)
	return a.view(), nil
}

// checkProject reads spec's project and checks that it permits the app.
func (a *application) checkProject(ctx workflow.Context, spec appspec.Application) (appspec.Project, error) {
	ctx = withLocalSteps(ctx) // the project lookup is a cheap step
	proj, err := getProject(ctx, spec.Project)
	if err != nil {
		return proj, temporal.NewApplicationError("project "+spec.Project+": "+errorMessage(err), ErrTypeNotPermitted, "project")
	}
	resolved, err := a.checkDestination(ctx, spec)
	if err != nil {
		return proj, err
	}
	if err := proj.CheckApp(resolved); err != nil {
		var fe *appspec.FieldError
		field := ""
		if errors.As(err, &fe) {
			field = fe.Field
		}
		return proj, temporal.NewApplicationError(err.Error(), ErrTypeNotPermitted, field)
	}
	return proj, nil
}

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
		if a.st.Retrack != "" && !a.retrack(ctx) {
			a.waitForWork(ctx)
			if err := ctx.Err(); err != nil {
				return err
			}
			continue
		}
		if a.moving != nil {
			if done, err := a.runMove(ctx); done {
				return err
			}
		}
		if a.deleting != nil {
			if a.runDelete(ctx) {
				a.notify(ctx)
				err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) && a.inFlight == 0 })
				a.drainSignals()
				return err
			}
		}
		if len(a.pending) == 0 && !a.skipReconcile(ctx) {
			a.reconcile(ctx)
			a.notify(ctx)
			a.autoSync(ctx)
		}
		for len(a.pending) > 0 && a.deleting == nil {
			p := a.pending[0]
			a.pending = a.pending[1:]
			a.runSync(ctx, p)
			a.reconcile(ctx)
			a.notify(ctx)
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
	if !a.st.Status.ReconcileSkipped { // a paused app waits for a message only
		sel.AddFuture(workflow.NewTimer(timerCtx, wait), func(workflow.Future) { a.timerFired = true })
	}
	sel.AddReceive(a.refresh, func(c workflow.ReceiveChannel, _ bool) {
		var r RefreshRequest
		c.Receive(ctx, &r)
		a.onRefresh(ctx, r)
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
		a.onRefresh(ctx, r)
	}
}

// queuedWork takes the work that arrived while the loop was busy, so that
// the loop goes on without starting (and cancelling) a timer: every
// refresh, or one sync or rollback signal, as the wait would take one. A
// wake-up is stale unless the spec changed after the last pass read it:
// a sync that woke the loop has run by now, and a deletion is handled
// before the loop waits.
func (a *application) queuedWork(ctx workflow.Context) bool {
	annotated := a.takeRefreshQueued()
	queued := a.wake.ReceiveAsync(nil) && !sameJSON(a.st.Spec, a.passSpec) || annotated
	a.otherCause = a.otherCause || queued
	for {
		var r RefreshRequest
		if !a.refresh.ReceiveAsync(&r) {
			break
		}
		a.onRefresh(ctx, r)
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

func (a *application) onRefresh(ctx workflow.Context, r RefreshRequest) {
	if e := r.Event; e != nil {
		a.event(ctx, e.Type, e.Reason, e.Message)
	}
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

func (a *application) shouldContinueAsNew(ctx workflow.Context) bool {
	if a.st.Status.Operation != nil || len(a.pending) > 0 || a.admitting > 0 {
		return false
	}
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= a.historyThreshold()
}

// continueAsNew waits for the handlers, drains the signals and carries the
// whole state into a new run. Sync and rollback signals that arrived meanwhile
// are carried too and handled first by the next run.
func (a *application) continueAsNew(ctx workflow.Context) error {
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) && a.inFlight == 0 }); err != nil {
		return err
	}
	for {
		var r RefreshRequest
		if !a.refresh.ReceiveAsync(&r) {
			break
		}
		a.onRefresh(ctx, r)
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
