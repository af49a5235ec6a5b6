package placement

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/settings"
)

// TaskQueueName is the activity's name: a wire contract, never rename.
const TaskQueueName = "placement.TaskQueue"

// Resolver maps a destination server to its task queue ("" for the
// default), and a registered cluster's name to its server; *settings.Store
// is one.
type Resolver interface {
	ClusterTaskQueue(ctx context.Context, server string) (string, error)
	ClusterServer(ctx context.Context, name string) (string, error)
}

// Input names the destination server, or the registered cluster Name
// (Argo CD's destination.name) when Server is empty.
type Input struct {
	Server string `json:"server"`
	Name   string `json:"name,omitempty"`
}

// Output is the task queue of the server's cluster activities; "" means the
// default queue (the workflow's own). Server is the server that Name
// stands for now.
type Output struct {
	TaskQueue string `json:"taskQueue,omitempty"`
	Server    string `json:"server,omitempty"`
}

// Activities is the placement capability.
type Activities struct {
	r Resolver
}

// New checks the resolver; without one (no registered clusters), every
// server uses the default queue.
func New(r Resolver) (*Activities, error) {
	if r == nil {
		return nil, errors.New("placement: a resolver is required")
	}
	return &Activities{r: r}, nil
}

// None is a Resolver that puts every cluster on the default queue.
type None struct{}

// ClusterTaskQueue returns "".
func (None) ClusterTaskQueue(context.Context, string) (string, error) { return "", nil }

// ClusterServer knows only the built-in in-cluster name.
func (None) ClusterServer(_ context.Context, name string) (string, error) {
	if name == appspec.InClusterName {
		return appspec.InClusterServer, nil
	}
	return "", fmt.Errorf("no cluster is registered under the name %s: %w", name, settings.ErrNotFound)
}

// Register registers the activity under its constant name.
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.TaskQueue, activity.RegisterOptions{Name: TaskQueueName})
}

// TaskQueue returns the task queue of in.Server's cluster activities, and
// resolves in.Name first when it is given. An unknown name is a
// non-retryable error of type kube.ErrUnknownCluster's.
func (a *Activities) TaskQueue(ctx context.Context, in Input) (Output, error) {
	var out Output
	if in.Server == "" && in.Name != "" {
		server, err := a.r.ClusterServer(ctx, in.Name)
		if errors.Is(err, settings.ErrNotFound) {
			err = kube.ErrUnknownCluster
		}
		if err != nil {
			return Output{}, failure.Activity(fmt.Errorf("destination.name %s: %w", in.Name, err))
		}
		in.Server, out.Server = server, server
	}
	q, err := a.r.ClusterTaskQueue(ctx, in.Server)
	if err != nil {
		return Output{}, failure.Activity(fmt.Errorf("task queue of cluster %s: %w", in.Server, err))
	}
	out.TaskQueue = q
	return out, nil
}
