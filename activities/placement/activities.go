package placement

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/windlass-cd/windlass/internal/failure"
)

// TaskQueueName is the activity's name: a wire contract, never rename.
const TaskQueueName = "placement.TaskQueue"

// Resolver maps a destination server to its task queue ("" for the
// default); *settings.Store is one.
type Resolver interface {
	ClusterTaskQueue(ctx context.Context, server string) (string, error)
}

// Input names the destination server.
type Input struct {
	Server string `json:"server"`
}

// Output is the task queue of the server's cluster activities; "" means the
// default queue (the workflow's own).
type Output struct {
	TaskQueue string `json:"taskQueue,omitempty"`
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

// Register registers the activity under its constant name.
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.TaskQueue, activity.RegisterOptions{Name: TaskQueueName})
}

// TaskQueue returns the task queue of in.Server's cluster activities.
func (a *Activities) TaskQueue(ctx context.Context, in Input) (Output, error) {
	q, err := a.r.ClusterTaskQueue(ctx, in.Server)
	if err != nil {
		return Output{}, failure.Activity(fmt.Errorf("task queue of cluster %s: %w", in.Server, err))
	}
	return Output{TaskQueue: q}, nil
}
