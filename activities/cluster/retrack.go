package cluster

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// RetrackName is the activity that hands an app's live objects to the
// app's new project: wire contract, never rename.
const RetrackName = "cluster.Retrack"

// RetrackInput names the app as its objects are tracked now (Target) and
// the project it moves to.
type RetrackInput struct {
	Target  Target `json:"target"`
	Project string `json:"project"`
	// Manifests are the app's last rendered manifests: their kinds are
	// searched too.
	Manifests *render.ManifestRef `json:"manifests,omitempty"`
}

// RetrackOutput counts the objects whose tracking moved.
type RetrackOutput struct {
	Retracked int `json:"retracked"`
}

const msgRetracked = "app resources retracked"

// Retrack rewrites the tracking annotation and the app label of every
// live object tracked for Target (hooks included) so that they name the
// app in Project. Nothing else of the objects changes: no apply, no
// delete. An object moved by an earlier attempt no longer carries the old
// label, so a retry moves the rest.
func (a *Activities) Retrack(ctx context.Context, in RetrackInput) (RetrackOutput, error) {
	out, err := a.retrack(ctx, in)
	if err != nil && ctx.Err() == nil {
		err = failure.Activity(fmt.Errorf("retrack %s to project %s: %w", appName(in.Target), in.Project, err))
	}
	return out, err
}

func (a *Activities) retrack(ctx context.Context, in RetrackInput) (RetrackOutput, error) {
	t := in.Target
	if in.Project == "" || in.Project == t.Project {
		return RetrackOutput{}, nil
	}
	c, d, err := a.clientsFor(ctx, t, in.Manifests)
	if err != nil {
		return RetrackOutput{}, err
	}
	tracked, err := a.listTracked(ctx, c, t, a.searchKinds(t, c, d.objs, hookKinds...))
	if err != nil {
		return RetrackOutput{}, err
	}
	var out RetrackOutput
	for _, l := range tracked {
		if err := a.bounded(ctx, func() error { return retrackObject(ctx, c, l, in.Project, t.App) }); err != nil {
			return out, apiError(err)
		}
		out.Retracked++
		heartbeat(ctx, waveProgress{})
	}
	a.log.Info(msgRetracked, "app", appName(t), "project", in.Project, "resources", out.Retracked)
	return out, nil
}

// retrackObject points l's tracking at app in project, with a merge patch
// that requires l's resourceVersion: an object changed meanwhile is read
// again by the retry.
func retrackObject(ctx context.Context, c *kube.Clients, l liveObject, project, app string) error {
	patch := map[string]any{"metadata": map[string]any{
		"resourceVersion": l.obj.GetResourceVersion(),
		"annotations":     map[string]string{manifest.TrackingAnnotation: manifest.TrackingID(project, app, l.obj)},
		"labels":          map[string]string{manifest.AppLabel: manifest.AppLabelValue(project, app)},
	}}
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = l.client(c).Patch(ctx, l.obj.GetName(), types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
