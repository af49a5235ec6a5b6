package workflows

import (
	"errors"
	"hash/fnv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/activities/source"
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
)

// application is the state and the handlers of one ApplicationWorkflow run.
type application struct {
	cfg     AppConfig
	st      AppState
	refresh workflow.ReceiveChannel
	wake    workflow.Channel
	pending []pendingSync
	done    map[string]SyncResult
	hard    bool
	passes  int
}

type pendingSync struct {
	id  string
	req SyncRequest
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
		cfg:     in.Config,
		refresh: workflow.GetSignalChannel(ctx, SignalRefresh),
		wake:    workflow.NewBufferedChannel(ctx, 1),
		done:    map[string]SyncResult{},
	}
	if in.State != nil {
		a.st = *in.State
		a.hard, a.st.HardRefresh = a.st.HardRefresh, false
	} else {
		a.st = AppState{Spec: in.Spec.Defaulted(), Status: AppStatus{Sync: appspec.SyncUnknown, Health: appspec.HealthUnknown}}
	}
	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (AppView, error) { return a.view(), nil }); err != nil {
		return nil, err
	}
	err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateSetSpec, a.setSpec, workflow.UpdateHandlerOptions{Validator: a.validateSpec})
	if err != nil {
		return nil, err
	}
	err = workflow.SetUpdateHandlerWithOptions(ctx, UpdateSync, a.sync, workflow.UpdateHandlerOptions{Validator: a.validateSync})
	if err != nil {
		return nil, err
	}
	return a, nil
}

func (a *application) view() AppView {
	return AppView{Spec: a.st.Spec, Status: a.st.Status, History: a.st.History}
}

func (a *application) validateSpec(_ workflow.Context, spec appspec.Application) error {
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

func (a *application) setSpec(_ workflow.Context, spec appspec.Application) (AppView, error) {
	a.st.Spec = spec.Defaulted()
	a.wake.SendAsync(true)
	return a.view(), nil
}

func (a *application) validateSync(_ workflow.Context, _ SyncRequest) error {
	if a.st.Status.Operation != nil || len(a.pending) > 0 {
		return temporal.NewApplicationError("another operation is already in progress", ErrTypeOperationInProgress)
	}
	return nil
}

// sync queues a sync for the main loop and waits for its result.
func (a *application) sync(ctx workflow.Context, req SyncRequest) (SyncResult, error) {
	a.st.SyncSeq++
	id := SyncWorkflowID(a.st.Spec.Project, a.st.Spec.Name, a.st.SyncSeq)
	a.pending = append(a.pending, pendingSync{id: id, req: req})
	a.st.Status.Operation = &Operation{SyncID: id, Phase: "Pending", Initiator: req.Initiator, StartedAt: workflow.Now(ctx)}
	a.wake.SendAsync(true)
	if err := workflow.Await(ctx, func() bool { _, ok := a.done[id]; return ok }); err != nil {
		return SyncResult{}, err
	}
	res := a.done[id]
	delete(a.done, id)
	return res, nil
}

func (a *application) run(ctx workflow.Context) error {
	for {
		a.reconcile(ctx)
		a.autoSync(ctx)
		for len(a.pending) > 0 {
			p := a.pending[0]
			a.pending = a.pending[1:]
			a.done[p.id] = a.runSync(ctx, p.id, p.req)
			a.reconcile(ctx)
		}
		if a.shouldContinueAsNew(ctx) {
			return a.continueAsNew(ctx)
		}
		a.waitForWork(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// waitForWork blocks until the refresh timer fires, a refresh signal
// arrives, or a handler queued work.
func (a *application) waitForWork(ctx workflow.Context) {
	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(workflow.NewTimer(timerCtx, a.refreshInterval(ctx)), func(workflow.Future) {})
	sel.AddReceive(a.refresh, func(c workflow.ReceiveChannel, _ bool) {
		var r RefreshRequest
		c.Receive(ctx, &r)
		a.hard = a.hard || r.Hard
	})
	sel.AddReceive(a.wake, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
	sel.Select(ctx)
}

// refreshInterval is the app's interval plus up to 10 % jitter, derived
// deterministically from the workflow ID and the pass number so that apps
// spread out without randomness in workflow code.
func (a *application) refreshInterval(ctx workflow.Context) time.Duration {
	secs := a.st.Spec.RefreshSeconds
	if secs <= 0 {
		secs = a.cfg.RefreshSeconds
	}
	if secs <= 0 {
		secs = 180
	}
	base := time.Duration(secs) * time.Second
	h := fnv.New32a()
	_, _ = h.Write([]byte(workflow.GetInfo(ctx).WorkflowExecution.ID))
	_, _ = h.Write([]byte{byte(a.passes), byte(a.passes >> 8)})
	jitter := time.Duration(uint64(base/10) * uint64(h.Sum32()%1000) / 1000)
	return base + jitter
}

// reconcile resolves, renders and compares, then publishes the status.
// Errors make the status Unknown with the message; they never fail the
// workflow.
func (a *application) reconcile(ctx workflow.Context) {
	a.passes++
	hard := a.hard
	a.hard = false
	spec := a.st.Spec
	st := &a.st.Status
	st.ReconciledAt = workflow.Now(ctx)
	st.Revision = spec.Source.Revision()
	defer a.publish(ctx)

	resolved, err := resolveRevision(ctx, source.ResolveInput{RepoURL: spec.Source.RepoURL, Revision: spec.Source.Revision()})
	if err != nil {
		a.unknown(ctx, "resolve revision", err)
		return
	}
	ref, err := renderManifests(ctx, render.RenderInput{Request: renderRequest(spec, resolved.SHA), Hard: hard})
	if err != nil {
		a.unknown(ctx, "render", err)
		return
	}
	cmp, err := compareState(ctx, cluster.CompareInput{Target: clusterTarget(spec), Manifests: ref})
	if err != nil {
		a.unknown(ctx, "compare", err)
		return
	}
	st.SHA, st.Sync, st.Health, st.Resources, st.Message = resolved.SHA, cmp.Sync, cmp.Health, cmp.Resources, ""
}

func (a *application) unknown(ctx workflow.Context, step string, err error) {
	st := &a.st.Status
	st.Sync, st.Health = appspec.SyncUnknown, appspec.HealthUnknown
	st.Message = step + ": " + errorMessage(err)
	workflow.GetLogger(ctx).Warn(msgReconcileFailed, "step", step, "error", st.Message)
}

const msgReconcileFailed = "reconcile failed"

// autoSync starts a sync when automated sync is on and the app is
// OutOfSync. As in Argo CD, a SHA whose sync failed is not retried, and
// without selfHeal a SHA already synced is not synced again after drift.
func (a *application) autoSync(ctx workflow.Context) {
	spec, st := a.st.Spec, a.st.Status
	if !spec.IsAutomated() || st.Sync != appspec.SyncOutOfSync || st.SHA == "" || len(a.pending) > 0 {
		return
	}
	if st.SHA == a.st.LastFailedSHA {
		return
	}
	if st.SHA == a.st.LastSyncedSHA && !spec.SyncPolicy.Automated.SelfHeal {
		return
	}
	a.st.SyncSeq++
	id := SyncWorkflowID(spec.Project, spec.Name, a.st.SyncSeq)
	a.runSync(ctx, id, SyncRequest{Initiator: InitiatorAutomated})
	a.reconcile(ctx)
}

// runSync resolves the revision and runs the SyncWorkflow child.
func (a *application) runSync(ctx workflow.Context, id string, req SyncRequest) SyncResult {
	spec := a.st.Spec
	rev := req.Revision
	if rev == "" {
		rev = spec.Source.Revision()
	}
	start := workflow.Now(ctx)
	a.st.Status.Operation = &Operation{SyncID: id, Phase: PhaseRunning, Initiator: req.Initiator, StartedAt: start}
	a.publish(ctx)
	defer func() { a.st.Status.Operation = nil }()

	res := SyncResult{SyncSummary: SyncSummary{ID: id, Revision: rev, Initiator: req.Initiator, StartedAt: start}}
	resolved, err := resolveRevision(ctx, source.ResolveInput{RepoURL: spec.Source.RepoURL, Revision: rev})
	if err != nil {
		res.Phase, res.Message, res.FinishedAt = PhaseFailed, "resolve revision: "+errorMessage(err), workflow.Now(ctx)
		a.record(res)
		return res
	}
	res.SHA = resolved.SHA
	childCtx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID: id,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			saProject.ValueSet(spec.Project), saApp.ValueSet(spec.Project+"/"+spec.Name)),
	})
	in := SyncInput{ID: id, Spec: spec, Revision: rev, SHA: resolved.SHA, DryRun: req.DryRun,
		Initiator: req.Initiator, WaitSeconds: a.cfg.SyncTimeoutSeconds}
	err = workflow.ExecuteChildWorkflow(childCtx, SyncWorkflowName, in).Get(ctx, &res)
	if err != nil {
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.Type() == ErrTypeSyncFailed && app.HasDetails() {
			_ = app.Details(&res)
		} else {
			res.Phase, res.Message = PhaseFailed, errorMessage(err)
		}
		if res.FinishedAt.IsZero() {
			res.FinishedAt = workflow.Now(ctx)
		}
	}
	if !req.DryRun {
		a.st.LastSyncedSHA = res.SHA
		if res.Phase == PhaseFailed {
			a.st.LastFailedSHA = res.SHA
		} else {
			a.st.LastFailedSHA = ""
		}
	}
	a.record(res)
	return res
}

func (a *application) record(res SyncResult) {
	a.st.History = append([]SyncSummary{res.SyncSummary}, a.st.History...)
	if len(a.st.History) > maxHistory {
		a.st.History = a.st.History[:maxHistory]
	}
}

// publish writes the status into search attributes and the memo, so that
// listing apps needs no query per app.
func (a *application) publish(ctx workflow.Context) {
	spec, st := a.st.Spec, a.st.Status
	_ = workflow.UpsertTypedSearchAttributes(ctx,
		saProject.ValueSet(spec.Project),
		saApp.ValueSet(spec.Project+"/"+spec.Name),
		saSync.ValueSet(string(st.Sync)),
		saHealth.ValueSet(string(st.Health)),
		saRev.ValueSet(st.SHA),
		saCluster.ValueSet(spec.Destination.Server),
	)
	op := ""
	if st.Operation != nil {
		op = st.Operation.Phase
	}
	_ = workflow.UpsertMemo(ctx, map[string]any{"resources": len(st.Resources), "operation": op, "message": st.Message})
}

func (a *application) shouldContinueAsNew(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	limit := a.cfg.HistoryThreshold
	if limit <= 0 {
		limit = 10000
	}
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= limit
}

// continueAsNew waits for the handlers, drains the refresh signals and
// carries the whole state into a new run.
func (a *application) continueAsNew(ctx workflow.Context) error {
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	for {
		var r RefreshRequest
		if !a.refresh.ReceiveAsync(&r) {
			break
		}
		a.hard = a.hard || r.Hard
	}
	st := a.st
	st.HardRefresh = a.hard
	return workflow.NewContinueAsNewError(ctx, ApplicationWorkflowName, AppInput{Spec: st.Spec, Config: a.cfg, State: &st})
}
