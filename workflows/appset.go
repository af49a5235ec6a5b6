package workflows

// This file holds the ApplicationSetWorkflow: one per set, it evaluates
// the set's generators and keeps its apps as the set says (see
// activities/appsets), on a timer, a refresh signal (a Git webhook) and
// on demand.

import (
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/appsets"
	"github.com/windlass-cd/windlass/internal/appset"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// Names of the set workflow and its messages: wire contracts. The
// refresh signal (SignalRefresh, RefreshRequest), the status query
// (QueryStatus), setSpec (UpdateSetSpec) and delete (UpdateDelete) share
// the app workflow's names.
const (
	ApplicationSetWorkflowName = "windlass.ApplicationSetWorkflow"
	// UpdateEvaluate runs a pass now and answers the set's view after it.
	UpdateEvaluate = "evaluate"
)

// ErrTypeInvalidAppSet: a setSpec whose set does not validate.
const ErrTypeInvalidAppSet = "InvalidApplicationSet"

// DefaultRequeueSeconds is how often a set is evaluated when none of its
// generators says (Argo CD's default is three minutes too).
const DefaultRequeueSeconds = 180

// appSetHistoryThreshold continues a set's workflow as new past this many
// events, so that its history stays small.
const appSetHistoryThreshold = 2000

// AppSetWorkflowID is the ID of a set's workflow.
func AppSetWorkflowID(name string) string { return "appset/" + name }

// AppSetInput starts a set's workflow.
type AppSetInput struct {
	Set appset.ApplicationSet `json:"set"`
	// Status is carried over by continue-as-new.
	Status *AppSetStatus `json:"status,omitempty"`
}

// AppSetStatus is the set's status.
type AppSetStatus struct {
	// Apps are the set's apps, "<project>/<name>", sorted.
	Apps []string `json:"apps"`
	// Generated counts the apps the generators yielded at the last pass
	// that succeeded.
	Generated int `json:"generated"`
	// Error, with its kind, is why the last pass wrote nothing.
	Error     string `json:"error,omitempty"`
	ErrorKind string `json:"errorKind,omitempty"`
	// LastEvaluatedAt is the end of the last pass, LastReason what
	// started it.
	LastEvaluatedAt time.Time `json:"lastEvaluatedAt,omitzero"`
	LastReason      string    `json:"lastReason,omitempty"`
	// LastChange is what the last pass that changed apps did.
	LastChange *appsets.ReconcileOutput `json:"lastChange,omitempty"`
	Passes     int                      `json:"passes"`
	// Deleting is set once the set's deletion has begun.
	Deleting bool `json:"deleting,omitempty"`
	// Changes counts the passes that created or updated apps;
	// RolledChanges is its value when the last rollout started.
	Changes       int `json:"changes,omitempty"`
	RolledChanges int `json:"rolledChanges,omitempty"`
	// Rollout is the set's RollingSync rollout, nil without one.
	Rollout *AppSetRollout `json:"rollout,omitempty"`
}

// AppSetView answers the status query, setSpec and evaluate.
type AppSetView struct {
	Set    appset.ApplicationSet `json:"set"`
	Status AppSetStatus          `json:"status"`
}

// AppSetDeleteRequest deletes a set. KeepApps leaves its apps as they
// are (kubectl's --cascade=orphan); otherwise each app is deleted with
// the cascade the set gave it.
type AppSetDeleteRequest struct {
	KeepApps  bool   `json:"keepApps,omitempty"`
	Initiator string `json:"initiator,omitempty"`
}

// AppSetDeleteResult names the apps deleted with the set.
type AppSetDeleteResult struct {
	Deleted []string `json:"deleted,omitempty"`
}

// eachGenerator calls f for every generator of the set, those inside a
// matrix or a merge too.
func eachGenerator(gs []appset.Generator, f func(appset.Generator)) {
	for _, g := range gs {
		f(g)
		switch {
		case g.Matrix != nil:
			eachGenerator(g.Matrix.Generators, f)
		case g.Merge != nil:
			eachGenerator(g.Merge.Generators, f)
		}
	}
}

// AppSetRepos are the normalised repository URLs a set's Git generators
// read, for the webhook to find it by.
func AppSetRepos(set appset.ApplicationSet) []string {
	out := []string{}
	eachGenerator(set.Spec.Generators, func(g appset.Generator) {
		if g.Git == nil {
			return
		}
		if k := appspec.NormalizeRepoURL(g.Git.RepoURL); k != "" && !slices.Contains(out, k) {
			out = append(out, k)
		}
	})
	return out
}

// AppSetRevisions are the revisions the set's Git generators read from
// the repository (normalised URL), "" for one that names none.
func AppSetRevisions(set appset.ApplicationSet, normalizedRepoURL string) []string {
	var out []string
	eachGenerator(set.Spec.Generators, func(g appset.Generator) {
		if g.Git != nil && appspec.NormalizeRepoURL(g.Git.RepoURL) == normalizedRepoURL {
			out = append(out, g.Git.Revision)
		}
	})
	return out
}

// requeueAfter is the shortest requeueAfterSeconds of the set's
// generators, DefaultRequeueSeconds when none sets one.
func requeueAfter(set appset.ApplicationSet) time.Duration {
	best := int64(0)
	eachGenerator(set.Spec.Generators, func(g appset.Generator) {
		var p *int64
		switch {
		case g.Git != nil:
			p = g.Git.RequeueAfterSeconds
		case g.Plugin != nil:
			p = g.Plugin.RequeueAfterSeconds
		case g.PullRequest != nil:
			p = g.PullRequest.RequeueAfterSeconds
		case g.SCMProvider != nil:
			p = g.SCMProvider.RequeueAfterSeconds
		}
		if p != nil && *p > 0 && (best == 0 || *p < best) {
			best = *p
		}
	})
	if best == 0 {
		best = DefaultRequeueSeconds
	}
	return time.Duration(best) * time.Second
}

// appSetRun is one run of a set's workflow.
type appSetRun struct {
	set    appset.ApplicationSet
	status AppSetStatus
	// reason is why the next pass runs ("" while none is asked for).
	reason string
	// passDone counts the passes done, which evaluate updates wait for.
	passDone  int
	deleting  *AppSetDeleteRequest
	deleted   *AppSetDeleteResult
	deleteErr error
	published string
	memo      map[string]any
	ro        rolloutState
}

// ApplicationSetWorkflow keeps a set's apps.
func ApplicationSetWorkflow(ctx workflow.Context, in AppSetInput) (AppSetDeleteResult, error) {
	r := &appSetRun{set: in.Set, reason: "started"}
	if in.Status != nil {
		r.status = *in.Status
		r.reason = "continued"
	}
	if err := r.handlers(ctx); err != nil {
		return AppSetDeleteResult{}, err
	}
	refresh := workflow.GetSignalChannel(ctx, SignalRefresh)
	for {
		r.publish(ctx)
		if r.deleting != nil {
			return r.remove(ctx)
		}
		if r.reason != "" {
			r.pass(ctx)
			r.roll(ctx)
			continue
		}
		if r.shouldContinueAsNew(ctx) {
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return AppSetDeleteResult{}, err
			}
			if r.drain(refresh) || r.reason != "" || r.deleting != nil {
				continue
			}
			st := r.status
			return AppSetDeleteResult{}, workflow.NewContinueAsNewError(ctx, ApplicationSetWorkflowName, AppSetInput{Set: r.set, Status: &st})
		}
		wait := requeueAfter(r.set)
		if r.ro.replanAt {
			wait = min(wait, replanDelay)
		}
		woke, err := workflow.AwaitWithTimeout(ctx, wait, func() bool {
			return r.reason != "" || r.deleting != nil || refresh.Len() > 0
		})
		if err != nil {
			return AppSetDeleteResult{}, err
		}
		switch {
		case !woke && r.ro.replanAt:
			r.roll(ctx)
		case !woke:
			r.reason = "requeue"
		}
		r.drain(refresh)
	}
}

// drain takes the refresh signals left, which ask for one more pass.
func (r *appSetRun) drain(ch workflow.ReceiveChannel) bool {
	got := false
	var req RefreshRequest
	for ch.ReceiveAsync(&req) {
		r.reason, got = "refresh: "+req.Reason, true
	}
	return got
}

func (r *appSetRun) handlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (AppSetView, error) { return r.view(), nil }); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateSetSpec, func(ctx workflow.Context, set appset.ApplicationSet) (AppSetView, error) {
		r.set, r.reason = set, "spec changed"
		return r.view(), nil
	}, workflow.UpdateHandlerOptions{Validator: func(_ workflow.Context, set appset.ApplicationSet) error {
		switch {
		case r.deleting != nil:
			return temporal.NewApplicationError("the set is being deleted", ErrTypeDeleting)
		case set.Metadata.Name != r.set.Metadata.Name:
			return temporal.NewApplicationError("metadata.name: a set cannot be renamed", ErrTypeInvalidAppSet, "metadata.name")
		}
		// The API validated the set (appset.Parse); the pass does again.
		return nil
	}}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateEvaluate, func(ctx workflow.Context, req RefreshRequest) (AppSetView, error) {
		want := r.passDone + 1
		if r.reason != "" {
			want++ // a pass may be running: wait for one that starts after now
		}
		r.reason = "evaluate: " + req.Reason
		if err := workflow.Await(ctx, func() bool { return r.passDone >= want || r.deleting != nil }); err != nil {
			return AppSetView{}, err
		}
		return r.view(), nil
	}, workflow.UpdateHandlerOptions{Validator: func(workflow.Context, RefreshRequest) error {
		if r.deleting != nil {
			return temporal.NewApplicationError("the set is being deleted", ErrTypeDeleting)
		}
		return nil
	}}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, UpdateDelete, func(ctx workflow.Context, req AppSetDeleteRequest) (AppSetDeleteResult, error) {
		if r.deleting == nil {
			r.deleting = &req
		}
		if err := workflow.Await(ctx, func() bool { return r.deleted != nil || r.deleteErr != nil }); err != nil {
			return AppSetDeleteResult{}, err
		}
		if r.deleteErr != nil {
			return AppSetDeleteResult{}, r.deleteErr
		}
		return *r.deleted, nil
	}, workflow.UpdateHandlerOptions{})
}

func (r *appSetRun) view() AppSetView {
	st := r.status
	st.Deleting = r.deleting != nil
	return AppSetView{Set: r.set, Status: st}
}

// pass runs one evaluation and records it.
func (r *appSetRun) pass(ctx workflow.Context) {
	reason := r.reason
	r.reason = ""
	out, err := reconcileAppSet(ctx, appsets.ReconcileInput{Set: r.set, Owned: r.status.Apps})
	r.status.Passes++
	r.status.LastReason = reason
	r.status.LastEvaluatedAt = workflow.Now(ctx)
	switch {
	case err != nil:
		r.status.Error, r.status.ErrorKind = "evaluation failed: "+err.Error(), "EvaluationFailed"
	default:
		r.status.Apps = out.Apps
		r.status.Error, r.status.ErrorKind = out.Error, out.ErrorKind
		if out.Error == "" {
			r.status.Generated = out.Generated
		}
		if len(out.Created)+len(out.Updated) > 0 {
			r.status.Changes++
		}
		if len(out.Created)+len(out.Updated)+len(out.Deleted) > 0 {
			change := out
			change.Apps = nil
			r.status.LastChange = &change
		}
	}
	if r.status.Apps == nil {
		r.status.Apps = []string{}
	}
	r.passDone++
	memo := map[string]any{MemoAppSetApps: len(r.status.Apps), MemoAppSetGenerated: r.status.Generated, MemoAppSetError: r.status.Error,
		MemoAppSetGenerators: appset.GeneratorSummaries(r.set)}
	if !sameJSON(memo, r.memo) {
		r.memo = memo
		_ = workflow.UpsertMemo(ctx, memo)
	}
}

// Memo fields of a set's workflow, which the API's list shows.
const (
	MemoAppSetApps      = "apps"
	MemoAppSetGenerated = "generated"
	MemoAppSetError     = "error"
	// MemoAppSetGenerators names each generator (appset.Summary).
	MemoAppSetGenerators = "generators"
)

// remove deletes the set: its apps first, unless kept.
func (r *appSetRun) remove(ctx workflow.Context) (AppSetDeleteResult, error) {
	res := AppSetDeleteResult{}
	if err := r.stopRollout(ctx); err != nil {
		workflow.GetLogger(ctx).Warn(msgSetRolloutPlan, "set", r.set.Metadata.Name, "error", err)
	}
	if !r.deleting.KeepApps {
		deleted, err := r.removeApps(ctx)
		if err != nil {
			r.deleteErr = err
			_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
			return res, err
		}
		res.Deleted = deleted
	}
	r.deleted = &res
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return res, err
	}
	return res, nil
}

// publish upserts the set's project and name (for RBAC and the list) and
// the repositories it reads (for the webhook) when they change.
func (r *appSetRun) publish(ctx workflow.Context) {
	repos, proj := AppSetRepos(r.set), AppSetProject(r.set)
	key := proj + "\x00" + strings.Join(repos, "\n")
	if key == r.published {
		return
	}
	r.published = key
	_ = workflow.UpsertTypedSearchAttributes(ctx, saRepo.ValueSet(repos), saName.ValueSet(r.set.Metadata.Name), saProject.ValueSet(proj))
}

// AppSetProject is the project of the set's template ("" when it is not
// a plain string), by which RBAC names the set: "<project>/<set>".
func AppSetProject(set appset.ApplicationSet) string {
	spec, _ := set.Spec.Template["spec"].(map[string]any)
	proj, _ := spec["project"].(string)
	if proj == "" {
		proj = appspec.DefaultProject
	}
	return proj
}

func (r *appSetRun) shouldContinueAsNew(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= appSetHistoryThreshold
}
