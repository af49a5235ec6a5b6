package metrics

import (
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"
)

// Sync results (the ResultTag of windlass_sync_*).
const (
	SyncSucceeded  = "Succeeded"
	SyncFailed     = "Failed"
	SyncTerminated = "Terminated"
	SyncError      = "Error"
)

// SyncInterceptor counts and times the runs of one workflow type, the sync
// workflow, when they end, labelled with Classify's verdict on their error.
// It records through workflow.GetMetricsHandler, which drops what a replay
// records, so a sync replayed by another worker is counted once. Give it to
// the Temporal client (client.Options.Interceptors): workers created from
// the client use it.
type SyncInterceptor struct {
	interceptor.InterceptorBase
	// WorkflowType is the registered name of the sync workflow.
	WorkflowType string
	// Classify maps the workflow's error (nil on success) to a result.
	Classify func(error) string
}

var (
	_ interceptor.WorkerInterceptor = (*SyncInterceptor)(nil)
	_ interceptor.ClientInterceptor = (*SyncInterceptor)(nil)
)

// InterceptWorkflow wraps the sync workflow's inbound calls.
func (s *SyncInterceptor) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	if workflow.GetInfo(ctx).WorkflowType.Name != s.WorkflowType {
		return next
	}
	return &syncInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, s: s}
}

type syncInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	s *SyncInterceptor
}

func (i *syncInbound) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	out, err := i.Next.ExecuteWorkflow(ctx, in)
	result := SyncSucceeded
	if err != nil {
		result = SyncError
		if i.s.Classify != nil {
			result = i.s.Classify(err)
		}
	}
	h := workflow.GetMetricsHandler(ctx).WithTags(map[string]string{ResultTag: result})
	h.Counter(SyncCounter).Inc(1)
	h.Timer(SyncTimer).Record(workflow.Now(ctx).Sub(workflow.GetInfo(ctx).WorkflowStartTime))
	return out, err
}
