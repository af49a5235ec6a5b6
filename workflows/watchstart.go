package workflows

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// StartClusterWatch starts the ClusterWatchWorkflow of a destination
// cluster unless it runs already. Workers start the in-cluster one and
// those of the registered clusters; the API starts a cluster's when it is
// registered, so that the apps deploying there can report their kinds.
// (This is client code, called outside workflows.)
func StartClusterWatch(ctx context.Context, c client.Client, taskQueue, server string, debounce time.Duration) error {
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: ClusterWatchWorkflowID(server), TaskQueue: taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, ClusterWatchWorkflowName, ClusterWatchInput{Server: server, DebounceMillis: int(debounce.Milliseconds())})
	if err != nil {
		return fmt.Errorf("start the watch of cluster %s: %w", server, err)
	}
	return nil
}

// StopClusterWatch ends the watch of a cluster that is no longer
// registered; one that is not running is no error.
func StopClusterWatch(ctx context.Context, c client.Client, server string) error {
	err := c.TerminateWorkflow(ctx, ClusterWatchWorkflowID(server), "", "the cluster was removed")
	var nf *serviceerror.NotFound
	if err != nil && !errors.As(err, &nf) {
		return fmt.Errorf("stop the watch of cluster %s: %w", server, err)
	}
	return nil
}
