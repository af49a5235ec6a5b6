package workflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// Error types of a SyncWorkflow that did not succeed; their details hold
// the SyncResult.
const (
	ErrTypeSyncFailed     = "SyncFailed"
	ErrTypeSyncTerminated = "SyncTerminated"
)

// Initiators of a sync.
const (
	InitiatorAutomated = "automated"
)

// syncRun is one SyncWorkflow execution.
type syncRun struct {
	in     SyncInput
	res    SyncResult
	target cluster.Target
	ref    render.ManifestRef
	// created says hooks or resources may exist that cleanup must visit.
	created bool
	// The step running now, for progress reports.
	step             cluster.Step
	stepIndex, steps int
	// awaiting lists the resources whose pruning waits for approval.
	awaiting []appspec.ResourceKey
	// hooked says this attempt's log holds, or held, a hook.
	hooked bool
	// refresh: a retry syncs the target's latest commit (retry.refresh).
	refresh bool
}

// SyncWorkflow runs one sync: render at the target SHA (a cache hit in the
// common case), plan, then PreSync, Sync and PostSync waves in order, each
// applied and then waited for until healthy, with prune after the Sync
// phase (or last). On failure the SyncFail hooks run. A retry policy
// retries a failed attempt unless its error cannot be fixed by retrying. A
// sync timeout or a termination cancels the running step, deletes the
// hooks the sync made, and records Terminated.
//
// A sync that does not succeed fails the workflow with an error of type
// ErrTypeSyncFailed or ErrTypeSyncTerminated whose details carry the
// SyncResult, so the Temporal UI shows it as failed and the parent still
// gets the per-resource log.
func SyncWorkflow(ctx workflow.Context, in SyncInput) (SyncResult, error) {
	ctx = withClusterQueue(ctx, in.TaskQueue)
	// The plan reads the manifests and the cluster's kinds: a cheap step,
	// local when the cluster's activities run on the workflow's own queue
	// (a worker of that queue can reach the cluster).
	if in.TaskQueue == "" {
		ctx = withLocalSteps(ctx)
	}
	s := &syncRun{in: in, target: clusterTarget(in.Spec)}
	s.refresh = refreshOnRetry(ctx, in)
	if in.Project != nil {
		// Used only when the workers turn sync impersonation on.
		s.target.ServiceAccount, _ = in.Project.ServiceAccountFor(in.Spec.Destination)
	}
	s.target.SyncOptions = append(s.target.SyncOptions, in.Operation.SyncOptions...)
	if s.in.Operation.SyncID == "" {
		s.in.Operation.SyncID = in.ID
		s.in.Operation.DryRun = in.DryRun
	}
	s.res = SyncResult{SyncSummary: SyncSummary{ID: in.ID, Revision: in.Revision, SHA: in.SHA, Sources: in.Sources,
		Prune: in.Operation.Prune, Initiator: in.Initiator, Phase: PhaseRunning, StartedAt: workflow.Now(ctx)}}

	workCtx, cancelWork := workflow.WithCancel(ctx)
	var (
		done    bool
		workErr error
	)
	workflow.Go(workCtx, func(c workflow.Context) {
		workErr = s.attempts(c)
		done = true
	})
	timeout := time.Duration(0)
	if p := in.Spec.SyncPolicy; p != nil && p.SyncTimeoutSeconds > 0 {
		timeout = time.Duration(p.SyncTimeoutSeconds) * time.Second
	}
	var (
		finished bool
		err      error
	)
	if timeout > 0 {
		finished, err = workflow.AwaitWithTimeout(ctx, timeout, func() bool { return done })
	} else {
		err = workflow.Await(ctx, func() bool { return done })
		finished = err == nil
	}
	if !finished || err != nil {
		why := "terminated"
		if err == nil {
			why = "sync timed out after " + timeout.String()
		}
		return s.terminate(ctx, cancelWork, func() bool { return done }, why)
	}
	cancelWork()
	if workErr != nil {
		return s.fail(ctx, workErr)
	}
	s.res.Phase = PhaseSucceeded
	if s.in.Operation.DryRun {
		s.res.Message = "dry run"
	} else {
		s.res.Message = "successfully synced"
	}
	if s.madeHooks() {
		if err := deleteHooks(ctx, cluster.HookCleanupInput{Target: s.target, SyncID: s.in.Operation.SyncID, Outcome: cluster.OutcomeSucceeded}); err != nil {
			s.res.Message += "; hook cleanup failed: " + errorMessage(err)
		}
	}
	s.res.FinishedAt = workflow.Now(ctx)
	return s.res, nil
}

// madeHooks says the sync created hooks (not in a dry run).
func (s *syncRun) madeHooks() bool {
	return !s.in.Operation.DryRun && s.hooked
}

// log adds results to the sync's per-resource log, which keeps at most
// cluster.MaxResults entries (a sync's result stays far below Temporal's
// payload limit) and counts the rest; omitted were left out already.
func (s *syncRun) log(results []cluster.ResourceResult, omitted int) {
	s.hooked = s.hooked || slices.ContainsFunc(results, func(r cluster.ResourceResult) bool { return r.Hook })
	room := max(cluster.MaxResults-len(s.res.Resources), 0)
	if len(results) > room {
		omitted += len(results) - room
		results = results[:room]
	}
	s.res.Resources = append(s.res.Resources, results...)
	s.res.Omitted += omitted
}

// stepError is a failed step, naming the failing resource.
type stepError struct {
	msg      string
	resource *appspec.ResourceKey
	cause    error
}

func (e *stepError) Error() string {
	if e.cause != nil {
		return e.msg + ": " + errorMessage(e.cause)
	}
	return e.msg
}

func (e *stepError) Unwrap() error { return e.cause }

// permanent reports whether retrying cannot fix err.
func permanent(err error) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app) && app.NonRetryable()
}

// attempts runs the sync, retrying per the spec's retry policy.
func (s *syncRun) attempts(ctx workflow.Context) error {
	limit, backoff := 0, time.Duration(0)
	factor, maxBackoff := int64(2), 3*time.Minute
	if p := s.in.Spec.SyncPolicy; p != nil && p.Retry != nil {
		limit = p.Retry.Limit
		backoff = 5 * time.Second
		if b := p.Retry.Backoff; b != nil {
			if d, err := appspec.ParseDuration(b.Duration); err == nil && b.Duration != "" {
				backoff = d
			}
			if b.Factor > 0 {
				factor = b.Factor
			}
			if d, err := appspec.ParseDuration(b.MaxDuration); err == nil && b.MaxDuration != "" {
				maxBackoff = d
			}
		}
	}
	for attempt := 1; ; attempt++ {
		s.res.Attempts = attempt
		err := s.once(ctx)
		if err == nil || ctx.Err() != nil || permanent(err) || (limit >= 0 && attempt > limit) {
			return err
		}
		workflow.GetLogger(ctx).Info(msgSyncRetry, "attempt", attempt, "backoff", backoff.String(), "error", err.Error())
		if err := workflow.Sleep(ctx, backoff); err != nil {
			return err
		}
		if s.refresh {
			s.refreshRevision(ctx)
		}
		backoff = min(time.Duration(int64(backoff)*factor), maxBackoff)
	}
}

const msgSyncRetry = "sync attempt failed, retrying"

// once is one attempt of the sync.
func (s *syncRun) once(ctx workflow.Context) error {
	in := s.in
	s.res.Resources, s.res.Failed, s.res.Omitted, s.hooked = nil, nil, 0, false
	req := render.Request{AppName: in.Spec.Name, Namespace: in.Spec.Destination.Namespace, Sources: in.Sources}
	if len(req.Sources) == 0 {
		req = renderRequest(in.Spec, in.SHA)
	}
	if in.Project != nil {
		req.SignatureKeys = in.Project.SignatureKeyIDs()
		req.Scope = render.ScopeOf(*in.Project)
	}
	var (
		ref render.ManifestRef
		err error
	)
	if in.Manifests != nil && sameJSON(in.Manifests.Request, req) {
		ref = *in.Manifests // rendered by the parent: the same request
	} else if ref, err = renderManifests(ctx, render.RenderInput{Request: req}); err != nil {
		return &stepError{msg: "render failed", cause: err}
	}
	s.ref = ref
	auto := in.Spec.SyncPolicy != nil && in.Spec.SyncPolicy.Automated != nil
	if ref.Count == 0 && in.Initiator == InitiatorAutomated && !(auto && in.Spec.SyncPolicy.Automated.AllowEmpty) {
		return temporal.NewNonRetryableApplicationError("render produced no resources and allowEmpty is off", "EmptyRender", nil)
	}
	plan, err := planSync(ctx, cluster.PlanInput{Target: s.target, Manifests: ref, Operation: in.Operation, Project: in.Project})
	if err != nil {
		return &stepError{msg: "plan failed", cause: err}
	}
	// Resources with their own PruneLast=true go in a last pass.
	early := ""
	if plan.PruneLastResources > 0 {
		early = cluster.PrunePassEarly
	}
	pruned := false
	for i, step := range plan.Steps {
		if !pruned && !plan.PruneLast && step.Phase == cluster.PhasePostSync {
			if err := s.prune(ctx, plan, early); err != nil {
				return err
			}
			pruned = true
		}
		s.progress(ctx, step, i, len(plan.Steps))
		var applied *cluster.WaveOutput
		if len(plan.Steps) == 1 && !in.Operation.DryRun {
			applied = plan.Applied // the plan applied the lone wave
		}
		if err := s.runStep(ctx, step, i == len(plan.Steps)-1, applied); err != nil {
			return err
		}
	}
	if !pruned {
		if err := s.prune(ctx, plan, early); err != nil {
			return err
		}
	}
	if early != "" {
		return s.prune(ctx, plan, cluster.PrunePassLast)
	}
	if !in.Operation.Prune {
		for _, k := range in.PruneSkipped {
			s.log([]cluster.ResourceResult{{ResourceKey: k, Action: cluster.ActionPruneSkipped, Message: msgPruneSkipped}}, 0)
		}
	}
	return nil
}

// msgPruneSkipped is Argo CD's word for a resource a sync without prune
// leaves.
const msgPruneSkipped = "ignored (requires pruning)"

// prune runs one prune pass. Resources marked Prune=confirm make it wait
// for the approveDeletion signal, then prune them.
func (s *syncRun) prune(ctx workflow.Context, plan cluster.PlanOutput, pass string) error {
	op := s.in.Operation
	if !op.Prune || plan.Prune == 0 {
		return nil
	}
	in := cluster.PruneInput{Target: s.target, Manifests: s.ref, Operation: op, Pass: pass}
	out, err := pruneResources(ctx, in)
	s.log(out.Resources, out.Omitted)
	if err != nil {
		return &stepError{msg: "prune failed", cause: err}
	}
	if len(out.AwaitingApproval) == 0 || op.DryRun {
		return nil
	}
	s.awaiting = out.AwaitingApproval
	s.report(ctx)
	approvals := workflow.GetSignalChannel(ctx, SignalApproveDeletion)
	sel := workflow.NewSelector(ctx)
	var req ApproveDeletionRequest
	sel.AddReceive(approvals, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &req) })
	sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
	sel.Select(ctx)
	if err := ctx.Err(); err != nil {
		return err
	}
	workflow.GetLogger(ctx).Info(msgPruneApproved, "resources", len(s.awaiting), "initiator", req.Initiator)
	in.Operation.Resources, in.Pass, in.Approved = s.awaiting, "", true
	s.awaiting = nil
	out, err = pruneResources(ctx, in)
	s.log(out.Resources, out.Omitted)
	s.report(ctx)
	if err != nil {
		return &stepError{msg: "approved prune failed", cause: err}
	}
	return nil
}

const msgPruneApproved = "pruning approved"

// runStep applies one wave and, unless this is a dry run, waits for it.
// The last step waits for its hooks only: as in
// Argo CD, a sync ends once its last wave is applied, and the app's
// health shows the rest. A wave that the plan applied (lone, settled) is
// taken as it is: no ApplyWave activity.
func (s *syncRun) runStep(ctx workflow.Context, step cluster.Step, last bool, lone *cluster.WaveOutput) error {
	wait := time.Duration(s.in.WaitSeconds) * time.Second
	if wait <= 0 {
		wait = defaultWaveWait
	}
	// The wave's wait timeout bounds its apply's settle wait and its
	// WaitWave together.
	wi := cluster.WaveInput{Target: s.target, Manifests: s.ref, Operation: s.in.Operation, Step: step, SettleMillis: wait.Milliseconds()}
	s.created = s.created || !s.in.Operation.DryRun
	start := workflow.Now(ctx)
	var (
		applied cluster.WaveOutput
		err     error
	)
	if lone != nil {
		applied = *lone
	} else {
		applied, err = applyWave(ctx, wi)
	}
	s.log(applied.Resources, applied.Omitted)
	if err != nil {
		return &stepError{msg: step.Phase + " wave " + strconv.Itoa(step.Wave) + ": apply failed", resource: applied.Failed, cause: err}
	}
	if s.in.Operation.DryRun {
		return nil
	}
	// A wave that its apply left healthy is done: no wait activity.
	if applied.Settled {
		s.res.Health = worseHealth(s.res.Health, applied.Health)
		return nil
	}
	if last {
		if !slices.ContainsFunc(applied.Resources, func(r cluster.ResourceResult) bool { return r.Hook }) {
			s.res.Health = worseHealth(s.res.Health, applied.Health)
			return nil
		}
		wi.HooksOnly = true
	}
	s.report(ctx) // what the wave applied, before its wait
	waited, err := waitWave(ctx, wi, max(wait-workflow.Now(ctx).Sub(start), time.Second))
	// The log keeps what happened: hook outcomes, not every health check.
	var outcomes []cluster.ResourceResult
	for _, r := range waited.Resources {
		if r.Action != cluster.ActionWaited {
			outcomes = append(outcomes, r)
		}
	}
	s.log(outcomes, 0)
	s.res.Health = worseHealth(s.res.Health, waited.Health)
	if err != nil {
		return &stepError{msg: step.Phase + " wave " + strconv.Itoa(step.Wave) + ": waiting failed", resource: waited.Failed, cause: err}
	}
	if waited.Health == appspec.HealthDegraded || waited.Failed != nil {
		msg := waited.Message
		if msg == "" {
			msg = "resources are degraded"
		}
		return &stepError{msg: step.Phase + " wave " + strconv.Itoa(step.Wave) + ": " + msg, resource: waited.Failed}
	}
	return nil
}

// defaultWaveWait is a wave's wait timeout when SyncInput.WaitSeconds is
// not set.
const defaultWaveWait = 5 * time.Minute

func worseHealth(a, b appspec.HealthStatus) appspec.HealthStatus {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return appspec.Worse(a, b)
}

// progress tells the parent which step runs now. The only step of a plan
// is not reported: "step 1 of 1" tells the app nothing its Running
// operation does not, and each report costs a workflow task here and one
// in the app.
func (s *syncRun) progress(ctx workflow.Context, step cluster.Step, i, n int) {
	s.step, s.stepIndex, s.steps = step, i, n
	if n == 1 {
		return
	}
	s.report(ctx)
}

// report signals the progress so far to the parent.
func (s *syncRun) report(ctx workflow.Context) {
	parent := workflow.GetInfo(ctx).ParentWorkflowExecution
	if !s.in.ReportProgress || parent == nil {
		return
	}
	p := SyncProgress{SyncID: s.in.ID, Step: s.step, StepIndex: s.stepIndex, Steps: s.steps, Resources: s.res.Resources,
		AwaitingApproval: s.awaiting}
	// Fire and forget: progress is a hint, the result is authoritative.
	workflow.SignalExternalWorkflow(ctx, parent.ID, parent.RunID, SignalSyncProgress, p)
}

// fail runs the SyncFail hooks and the hook cleanup, then fails the
// workflow with the result.
func (s *syncRun) fail(ctx workflow.Context, err error) (SyncResult, error) {
	s.res.Phase, s.res.Message = PhaseFailed, errorMessage(err)
	var se *stepError
	if errors.As(err, &se) && se.resource != nil {
		s.res.Failed = se.resource
	}
	if s.created && s.ref.Key != "" {
		s.runSyncFail(ctx)
		if cerr := deleteHooks(ctx, cluster.HookCleanupInput{Target: s.target, SyncID: s.in.Operation.SyncID, Outcome: cluster.OutcomeFailed}); cerr != nil {
			s.res.Message += "; hook cleanup failed: " + errorMessage(cerr)
		}
	}
	s.res.FinishedAt = workflow.Now(ctx)
	return s.res, temporal.NewNonRetryableApplicationError(s.res.Message, ErrTypeSyncFailed, nil, s.res)
}

// runSyncFail runs the SyncFail steps; their own failures are noted, not
// fatal.
func (s *syncRun) runSyncFail(ctx workflow.Context) {
	plan, err := planSync(ctx, cluster.PlanInput{Target: s.target, Manifests: s.ref, Operation: s.in.Operation, Project: s.in.Project})
	if err != nil || len(plan.SyncFail) == 0 {
		return
	}
	for _, step := range plan.SyncFail {
		if err := s.runStep(ctx, step, false, nil); err != nil {
			s.res.Message += "; SyncFail hooks failed: " + errorMessage(err)
			return
		}
	}
}

// terminate stops the work, waits for it to unwind, deletes the hooks the
// sync made and records Terminated.
func (s *syncRun) terminate(ctx workflow.Context, cancelWork workflow.CancelFunc, done func() bool, why string) (SyncResult, error) {
	cancelWork()
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	_ = workflow.Await(dctx, done)
	s.res.Phase, s.res.Message = PhaseTerminated, why
	if s.created {
		if err := deleteHooks(dctx, cluster.HookCleanupInput{Target: s.target, SyncID: s.in.Operation.SyncID, Outcome: cluster.OutcomeTerminated}); err != nil {
			s.res.Message += "; hook cleanup failed: " + errorMessage(err)
		}
	}
	s.res.FinishedAt = workflow.Now(dctx)
	return s.res, temporal.NewNonRetryableApplicationError(s.res.Message, ErrTypeSyncTerminated, nil, s.res)
}

// sameJSON says whether a and b are equal as JSON, the form they have in
// histories (so a nil and an empty list are the same).
func sameJSON(a, b any) bool {
	//workflowcheck:ignore (encoding/json writes map keys sorted: the same value gives the same bytes)
	ja, errA := json.Marshal(a)
	//workflowcheck:ignore (as above)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

func renderRequest(spec appspec.Application, sha string) render.Request {
	return render.SingleSource(spec.Name, spec.Destination.Namespace, spec.Source, sha)
}

func clusterTarget(spec appspec.Application) cluster.Target { return cluster.TargetFor(spec) }

// errorMessage unwraps Temporal's activity and child errors to the message
// of the cause, which is what a user needs to read.
func errorMessage(err error) string {
	var se *stepError
	if errors.As(err, &se) {
		return se.Error()
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return "timed out (" + timeout.TimeoutType().String() + ")"
	}
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) {
		return "canceled"
	}
	return err.Error()
}
