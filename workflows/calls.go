package workflows

import (
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/appsets"
	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/depends"
	"github.com/windlass-cd/windlass/activities/notify"
	"github.com/windlass-cd/windlass/activities/placement"
	"github.com/windlass-cd/windlass/activities/project"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/activities/rollout"
	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/notifications"
)

// One typed helper per activity: the SDK does not type-check activity
// arguments, these do.

func resolveRevision(ctx workflow.Context, in source.ResolveInput) (source.ResolveOutput, error) {
	var out source.ResolveOutput
	err := cheap(ctx, gitOptions, source.ResolveRevisionName, in).Get(ctx, &out)
	return out, err
}

func renderManifests(ctx workflow.Context, in render.RenderInput) (render.ManifestRef, error) {
	var out render.ManifestRef
	err := workflow.ExecuteActivity(gitOptions(ctx), render.RenderName, in).Get(ctx, &out)
	return out, err
}

// compareState compares, as a local activity when local (see
// localCompare).
func compareState(ctx workflow.Context, in cluster.CompareInput, local bool) (cluster.CompareOutput, error) {
	var out cluster.CompareOutput
	var f workflow.Future
	if local {
		f = workflow.ExecuteLocalActivity(localOptions(clusterOptions(ctx)), cluster.CompareName, in)
	} else {
		f = workflow.ExecuteActivity(clusterOptions(ctx), cluster.CompareName, in)
	}
	err := f.Get(ctx, &out)
	return out, err
}

func getProject(ctx workflow.Context, name string) (appspec.Project, error) {
	var out appspec.Project
	err := cheap(ctx, quickOptions, project.GetName, project.GetInput{Name: name}).Get(ctx, &out)
	return out, err
}

func checkDependencies(ctx workflow.Context, in depends.CheckInput) (depends.CheckOutput, error) {
	var out depends.CheckOutput
	err := cheap(ctx, quickOptions, depends.CheckName, in).Get(ctx, &out)
	return out, err
}

func syncWindow(ctx workflow.Context, in project.WindowInput) (appspec.WindowDecision, error) {
	var out appspec.WindowDecision
	err := cheap(ctx, quickOptions, project.SyncWindowName, in).Get(ctx, &out)
	return out, err
}

func planSync(ctx workflow.Context, in cluster.PlanInput) (cluster.PlanOutput, error) {
	var out cluster.PlanOutput
	err := cheap(ctx, clusterOptions, cluster.PlanName, in).Get(ctx, &out)
	return out, err
}

func applyWave(ctx workflow.Context, in cluster.WaveInput) (cluster.WaveOutput, error) {
	var out cluster.WaveOutput
	err := workflow.ExecuteActivity(clusterOptions(ctx), cluster.ApplyWaveName, in).Get(ctx, &out)
	return out, err
}

func waitWave(ctx workflow.Context, in cluster.WaveInput, timeout time.Duration) (cluster.WaveOutput, error) {
	var out cluster.WaveOutput
	err := workflow.ExecuteActivity(waitOptions(ctx, timeout), cluster.WaitWaveName, in).Get(ctx, &out)
	return out, err
}

func pruneResources(ctx workflow.Context, in cluster.PruneInput) (cluster.PruneOutput, error) {
	var out cluster.PruneOutput
	err := workflow.ExecuteActivity(clusterOptions(ctx), cluster.PruneName, in).Get(ctx, &out)
	return out, err
}

func deleteHooks(ctx workflow.Context, in cluster.HookCleanupInput) error {
	return workflow.ExecuteActivity(clusterOptions(ctx), cluster.DeleteHooksName, in).Get(ctx, nil)
}

func deleteApp(ctx workflow.Context, in cluster.DeleteAppInput) (cluster.DeleteAppOutput, error) {
	var out cluster.DeleteAppOutput
	err := workflow.ExecuteActivity(deleteOptions(ctx), cluster.DeleteAppName, in).Get(ctx, &out)
	return out, err
}

func clusterTaskQueue(ctx workflow.Context, server string) (string, error) {
	var out placement.Output
	err := cheap(ctx, quickOptions, placement.TaskQueueName, placement.Input{Server: server}).Get(ctx, &out)
	return out.TaskQueue, err
}

func findOrphans(ctx workflow.Context, in cluster.OrphansInput) (cluster.OrphansOutput, error) {
	var out cluster.OrphansOutput
	err := workflow.ExecuteActivity(clusterOptions(ctx), cluster.OrphansName, in).Get(ctx, &out)
	return out, err
}

func runResourceAction(ctx workflow.Context, in cluster.RunActionInput) (cluster.RunActionOutput, error) {
	var out cluster.RunActionOutput
	err := workflow.ExecuteActivity(actionOptions(ctx), cluster.RunActionName, in).Get(ctx, &out)
	return out, err
}

func resolveChart(ctx workflow.Context, in render.ResolveChartInput) (render.ResolveChartOutput, error) {
	var out render.ResolveChartOutput
	err := workflow.ExecuteActivity(gitOptions(ctx), render.ResolveChartName, in).Get(ctx, &out)
	return out, err
}

// cheap runs one of the cheap steps (project, sync window, placement,
// ls-remote, and a sync's plan on the workflow's own queue): as a local activity when ctx says so (withLocalSteps), which
// saves the activity task and the workflow task that a regular activity
// costs, otherwise as a regular activity with the preset opts.
func cheap(ctx workflow.Context, opts func(workflow.Context) workflow.Context, name string, in any) workflow.Future {
	if localSteps(ctx) {
		return workflow.ExecuteLocalActivity(localOptions(opts(ctx)), name, in)
	}
	return workflow.ExecuteActivity(opts(ctx), name, in)
}

func evaluateNotifications(ctx workflow.Context, in notify.EvaluateInput) (notifications.Plan, error) {
	var out notifications.Plan
	err := workflow.ExecuteLocalActivity(evaluateOptions(ctx), notify.EvaluateName, in).Get(ctx, &out)
	return out, err
}

// deliverNotification starts a delivery; the caller waits on the future.
func deliverNotification(ctx workflow.Context, in notify.DeliverInput, seq int) workflow.Future {
	id := "notify/" + in.Delivery.Key + "/" + strconv.Itoa(seq)
	return workflow.ExecuteActivity(notifyOptions(ctx, id), notify.DeliverName, in)
}

func reconcileAppSet(ctx workflow.Context, in appsets.ReconcileInput) (appsets.ReconcileOutput, error) {
	var out appsets.ReconcileOutput
	err := workflow.ExecuteActivity(appSetOptions(ctx), appsets.ReconcileName, in).Get(ctx, &out)
	return out, err
}

func deleteAppSetApps(ctx workflow.Context, in appsets.DeleteAppsInput) (appsets.DeleteAppsOutput, error) {
	var out appsets.DeleteAppsOutput
	err := workflow.ExecuteActivity(appSetDeleteOptions(ctx), appsets.DeleteAppsName, in).Get(ctx, &out)
	return out, err
}

// rolloutSync asks an app for a rollout's sync. A busy app is asked again
// until it is free; summary names the step and app in the history.
func rolloutSync(ctx workflow.Context, in rollout.SyncInput, summary string) (rollout.SyncOutput, error) {
	var out rollout.SyncOutput
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		Summary:             summary,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second},
	})
	err := workflow.ExecuteActivity(ctx, rollout.SyncName, in).Get(ctx, &out)
	return out, err
}

func checkRollout(ctx workflow.Context, in rollout.CheckInput) (rollout.CheckOutput, error) {
	var out rollout.CheckOutput
	err := workflow.ExecuteActivity(quickOptions(ctx), rollout.CheckName, in).Get(ctx, &out)
	return out, err
}

// planSetRollout reads a set's apps for its rollout.
func planSetRollout(ctx workflow.Context, in rollout.PlanInput) (rollout.PlanOutput, error) {
	var out rollout.PlanOutput
	err := workflow.ExecuteActivity(appSetOptions(ctx), rollout.PlanName, in).Get(ctx, &out)
	return out, err
}

func retrackApp(ctx workflow.Context, in cluster.RetrackInput) (cluster.RetrackOutput, error) {
	var out cluster.RetrackOutput
	err := workflow.ExecuteActivity(deleteOptions(ctx), cluster.RetrackName, in).Get(ctx, &out)
	return out, err
}
