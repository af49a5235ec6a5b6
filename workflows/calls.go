package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/activities/source"
)

// One typed helper per activity: the SDK does not type-check activity
// arguments, these do.

func resolveRevision(ctx workflow.Context, in source.ResolveInput) (source.ResolveOutput, error) {
	var out source.ResolveOutput
	err := workflow.ExecuteActivity(gitOptions(ctx), source.ResolveRevisionName, in).Get(ctx, &out)
	return out, err
}

func renderManifests(ctx workflow.Context, in render.RenderInput) (render.ManifestRef, error) {
	var out render.ManifestRef
	err := workflow.ExecuteActivity(gitOptions(ctx), render.RenderName, in).Get(ctx, &out)
	return out, err
}

func compareState(ctx workflow.Context, in cluster.CompareInput) (cluster.CompareOutput, error) {
	var out cluster.CompareOutput
	err := workflow.ExecuteActivity(clusterOptions(ctx), cluster.CompareName, in).Get(ctx, &out)
	return out, err
}

func applyManifests(ctx workflow.Context, in cluster.ApplyInput) (cluster.ApplyOutput, error) {
	var out cluster.ApplyOutput
	err := workflow.ExecuteActivity(clusterOptions(ctx), cluster.ApplyName, in).Get(ctx, &out)
	return out, err
}

func waitHealthy(ctx workflow.Context, in cluster.WaitInput, timeout time.Duration) (cluster.CompareOutput, error) {
	var out cluster.CompareOutput
	err := workflow.ExecuteActivity(waitOptions(ctx, timeout), cluster.WaitHealthyName, in).Get(ctx, &out)
	return out, err
}
