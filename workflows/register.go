package workflows

import (
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Register registers the workflows under their constant names.
func Register(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(ApplicationWorkflow, workflow.RegisterOptions{Name: ApplicationWorkflowName})
	r.RegisterWorkflowWithOptions(SyncWorkflow, workflow.RegisterOptions{Name: SyncWorkflowName})
	r.RegisterWorkflowWithOptions(ClusterWatchWorkflow, workflow.RegisterOptions{Name: ClusterWatchWorkflowName})
	r.RegisterWorkflowWithOptions(SelfHealSweepWorkflow, workflow.RegisterOptions{Name: SelfHealSweepWorkflowName})
	r.RegisterWorkflowWithOptions(ApplicationSetWorkflow, workflow.RegisterOptions{Name: ApplicationSetWorkflowName})
	r.RegisterWorkflowWithOptions(RollingSyncWorkflow, workflow.RegisterOptions{Name: RollingSyncWorkflowName})
}
