package frontdoor

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// argoOperation is the part of an Application's operation field that asks
// for a sync, as `argocd app sync` and `kubectl patch` write it.
type argoOperation struct {
	InitiatedBy struct {
		Username string `json:"username"`
	} `json:"initiatedBy"`
	Sync *struct {
		Revision     string                `json:"revision"`
		Revisions    []string              `json:"revisions"`
		Prune        bool                  `json:"prune"`
		DryRun       bool                  `json:"dryRun"`
		Resources    []appspec.ResourceKey `json:"resources"`
		SyncOptions  []string              `json:"syncOptions"`
		SyncStrategy *struct {
			Apply *struct{} `json:"apply"`
		} `json:"syncStrategy"`
	} `json:"sync"`
}

// condSync is Argo CD's condition type for an operation it cannot run.
const condSync = "SyncError"

// msgOperation is logged when an Application's operation starts a sync.
const msgOperation = "front door operation started a sync"

// syncRequestOf reads u's operation: nil when it asks for no sync, or an
// error saying why the sync it asks for cannot run.
func syncRequestOf(u *unstructured.Unstructured) (*workflows.SyncRequest, error) {
	raw, ok := u.Object["operation"]
	if !ok || raw == nil {
		return nil, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var op argoOperation
	if err := json.Unmarshal(b, &op); err != nil {
		return nil, fmt.Errorf("operation: %w", err)
	}
	if op.Sync == nil {
		return nil, fmt.Errorf("operation: only sync is supported")
	}
	s := op.Sync
	if len(s.Revisions) > 0 {
		return nil, fmt.Errorf("operation.sync.revisions: not supported by Windlass: sync a multi-source app at its spec's revisions")
	}
	req := &workflows.SyncRequest{Revision: s.Revision, Prune: s.Prune, DryRun: s.DryRun, Resources: s.Resources,
		SyncOptions: s.SyncOptions, Initiator: op.InitiatedBy.Username}
	if s.SyncStrategy != nil && s.SyncStrategy.Apply != nil {
		req.Strategy = "apply"
	}
	if req.Initiator == "" {
		req.Initiator = "kubernetes:" + u.GetNamespace() + "/" + u.GetName()
	}
	return req, nil
}

// runOperation starts the sync that u's operation asks for and removes the
// operation, as Argo CD's controller does once it takes it on; started
// says a sync started or one is running. A sync already running leaves
// the operation for a later pass; a refusal is returned as a condition
// and the operation is removed.
func (c *Controller) runOperation(ctx context.Context, u *unstructured.Unstructured, app appRef) (*condition, bool, error) {
	req, err := syncRequestOf(u)
	if req == nil && err == nil {
		return nil, false, nil
	}
	var cond *condition
	if err != nil {
		cond = &condition{Type: condSync, Message: err.Error()}
	} else {
		acc, err := c.apps.SyncApplication(ctx, app.project, app.name, *req)
		if isStatus(err, http.StatusConflict) && isRunning(ctx, c.apps, app) {
			return nil, true, nil // one at a time: ask again when it has ended
		}
		if msg, refused := refusal(err); refused {
			cond = &condition{Type: condSync, Message: msg}
		} else if err != nil {
			return nil, false, err
		} else {
			c.cfg.Logger.Info(msgOperation, "resource", u.GetNamespace()+"/"+u.GetName(), "sync", acc.ID)
		}
	}
	patch := []byte(`[{"op":"remove","path":"/operation"}]`)
	_, err = c.dyn.Resource(c.resource(kindApp)).Namespace(u.GetNamespace()).Patch(ctx, u.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
		return cond, false, fmt.Errorf("remove the operation of %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	delete(u.Object, "operation")
	return cond, cond == nil, nil
}

// isRunning says whether app has an operation in progress.
func isRunning(ctx context.Context, apps Apps, app appRef) bool {
	v, err := apps.Application(ctx, app.project, app.name)
	return err == nil && v.Status.Operation != nil
}
