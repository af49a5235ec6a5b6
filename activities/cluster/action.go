package cluster

import (
	"context"
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	resactions "github.com/windlass-cd/windlass/internal/actions"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/kube"
)

// RunActionName is the activity that runs a resource action.
const RunActionName = "cluster.RunAction"

// ActionFieldManager is the field manager of the changes actions make.
const ActionFieldManager = "windlass-action"

// ErrResourceNotFound: the object an action is for is not in the cluster.
var ErrResourceNotFound = failure.Permanent("ResourceNotFound", "resource not found in the cluster")

// ActionCatalog lists and runs resource actions; *actions.Catalog is one.
type ActionCatalog interface {
	List(obj *unstructured.Unstructured) ([]resactions.Action, error)
	Run(obj *unstructured.Unstructured, name string, params map[string]string) ([]resactions.Operation, error)
}

var _ ActionCatalog = (*resactions.Catalog)(nil)

// builtinActions is the catalog of the built-in actions only.
var builtinActions = func() *resactions.Catalog {
	c, err := resactions.New(resactions.Options{})
	if err != nil {
		panic(err) // no scripts to load: cannot fail
	}
	return c
}()

// WithActions sets the resource actions (default: the built-ins only).
func WithActions(c ActionCatalog) Option {
	return func(a *Activities) {
		if c != nil {
			a.actions = c
		}
	}
}

// ActionInput names a resource of an app.
type ActionInput struct {
	Target   Target              `json:"target"`
	Resource appspec.ResourceKey `json:"resource"`
}

// RunActionInput is an action to run on a resource.
type RunActionInput struct {
	ActionInput
	Action string            `json:"action"`
	Params map[string]string `json:"params,omitempty"`
}

// ActionChange is one object an action changed or created.
type ActionChange struct {
	Operation string              `json:"operation"`
	Resource  appspec.ResourceKey `json:"resource"`
}

// RunActionOutput lists what an action changed, in order.
type RunActionOutput struct {
	Changes []ActionChange `json:"changes"`
}

// ListActions returns the actions available for a live resource. Like
// Diff, it is for the API, not an activity.
func (a *Activities) ListActions(ctx context.Context, in ActionInput) ([]resactions.Action, error) {
	_, obj, err := a.actionObject(ctx, in)
	if err != nil {
		return nil, err
	}
	return a.actions.List(obj)
}

// RunAction runs an action on a live resource and applies what it
// returns: a JSON merge patch of what it changed in the object, and the
// objects it creates, under ActionFieldManager. Nothing is applied when
// the action fails.
func (a *Activities) RunAction(ctx context.Context, in RunActionInput) (RunActionOutput, error) {
	out, err := a.runAction(ctx, in)
	return out, failure.Activity(err)
}

func (a *Activities) runAction(ctx context.Context, in RunActionInput) (RunActionOutput, error) {
	c, obj, err := a.actionObject(ctx, in.ActionInput)
	if err != nil {
		return RunActionOutput{}, err
	}
	ops, err := a.actions.Run(obj, in.Action, in.Params)
	if err != nil {
		return RunActionOutput{}, err
	}
	if c, err = a.syncClients(in.Target, c); err != nil {
		return RunActionOutput{}, err
	}
	var out RunActionOutput
	for _, op := range ops {
		key := appspec.ResourceKey{Group: op.Object.GroupVersionKind().Group, Kind: op.Object.GetKind(), Namespace: op.Object.GetNamespace(), Name: op.Object.GetName()}
		if err := a.bounded(ctx, func() error { return applyOperation(ctx, c, obj, op, &key) }); err != nil {
			return out, fmt.Errorf("action %s on %s: %s %s: %w", in.Action, describe(in.Resource), op.Type, describe(key), apiError(err))
		}
		out.Changes = append(out.Changes, ActionChange{Operation: op.Type, Resource: key})
	}
	return out, nil
}

// applyOperation patches obj with what op changed in it, or creates op's
// object (key gets its generated name).
func applyOperation(ctx context.Context, c *kube.Clients, obj *unstructured.Unstructured, op resactions.Operation, key *appspec.ResourceKey) error {
	ri, err := resourceFor(c, op.Object.GroupVersionKind(), op.Object.GetNamespace())
	if err != nil {
		return err
	}
	if op.Type == resactions.OpCreate {
		// A script may build the new object from a copy of the old one.
		o := op.Object.DeepCopy()
		for _, f := range [][]string{{"metadata", "uid"}, {"metadata", "resourceVersion"}, {"metadata", "creationTimestamp"}, {"metadata", "managedFields"}, {"status"}} {
			unstructured.RemoveNestedField(o.Object, f...)
		}
		created, err := ri.Create(ctx, o, metav1.CreateOptions{FieldManager: ActionFieldManager})
		if err == nil {
			key.Name = created.GetName()
		}
		return err
	}
	before, err := json.Marshal(shown(obj)) // a patch never carries managed fields
	if err != nil {
		return err
	}
	after, err := json.Marshal(shown(op.Object))
	if err != nil {
		return err
	}
	patch, err := jsonpatch.CreateMergePatch(before, after)
	if err != nil {
		return err
	}
	if string(patch) == "{}" {
		return nil
	}
	_, err = ri.Patch(ctx, obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: ActionFieldManager})
	return err
}

// resourceFor is the dynamic client of a kind, in namespace when the kind
// is namespaced.
func resourceFor(c *kube.Clients, gvk schema.GroupVersionKind, namespace string) (dynamic.ResourceInterface, error) {
	var versions []string
	if gvk.Version != "" {
		versions = append(versions, gvk.Version)
	}
	m, err := c.Mapper.RESTMapping(gvk.GroupKind(), versions...)
	if err != nil {
		c.Mapper.Reset()
		if m, err = c.Mapper.RESTMapping(gvk.GroupKind(), versions...); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrUnknownKind, gvk.GroupKind(), err)
		}
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.Dynamic.Resource(m.Resource).Namespace(namespace), nil
	}
	return c.Dynamic.Resource(m.Resource), nil
}

// actionObject reads the live object of in.Resource, at the kind's
// preferred version.
func (a *Activities) actionObject(ctx context.Context, in ActionInput) (*kube.Clients, *unstructured.Unstructured, error) {
	c, err := a.clusters.For(in.Target.Destination.Server)
	if err != nil {
		return nil, nil, err
	}
	k := in.Resource
	ri, err := resourceFor(c, schema.GroupVersionKind{Group: k.Group, Kind: k.Kind}, k.Namespace)
	if err != nil {
		return nil, nil, err
	}
	obj, err := ri.Get(ctx, k.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, fmt.Errorf("%w: %s", ErrResourceNotFound, describe(k))
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", describe(k), err)
	}
	return c, obj, nil
}
