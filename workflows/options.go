package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Activity option presets. Every activity has a StartToCloseTimeout;
// failures that retrying cannot fix are non-retryable errors and fail fast.
// The Git activities (resolve, render) get a heartbeat timeout too: workers
// heartbeat for them (worker.autoHeartbeat), so one that dies mid-render is
// noticed in seconds rather than after the whole timeout.
func gitOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		HeartbeatTimeout:    30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, MaximumAttempts: 3,
		},
	})
}

// quickOptions is for activities that only read configuration.
func quickOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second, MaximumAttempts: 5,
		},
	})
}

// localOptions turns the regular preset set on ctx into a local
// activity's: the same timeout for each attempt and the same retries, all
// attempts within their sum (the SDK's default budget for a local
// activity is a single attempt's timeout, which a plan queued behind a
// burst of compares exceeded). An attempt longer than the workflow task's
// timeout keeps the task alive by the SDK's workflow-task heartbeat.
func localOptions(ctx workflow.Context) workflow.Context {
	ao := workflow.GetActivityOptions(ctx)
	attempts := time.Duration(1)
	if ao.RetryPolicy != nil && ao.RetryPolicy.MaximumAttempts > 0 {
		attempts = time.Duration(ao.RetryPolicy.MaximumAttempts)
	}
	backoff := time.Duration(0)
	if ao.RetryPolicy != nil {
		backoff = ao.RetryPolicy.MaximumInterval
	}
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    ao.StartToCloseTimeout,
		ScheduleToCloseTimeout: attempts * (ao.StartToCloseTimeout + backoff),
		RetryPolicy:            ao.RetryPolicy,
	})
}

// quickPassOptions is for the quick pass (application.quickPass): one
// attempt, as long as a compare's, since the pass runs every step that
// the quick pass did not answer for with the step's own retries.
func quickPassOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    5 * time.Minute,
		ScheduleToCloseTimeout: 5 * time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	})
}

// localStepsKey marks, in a workflow context, that the cheap steps run as
// local activities.
type localStepsKey struct{}

// withLocalSteps makes the cheap steps started from ctx local activities.
func withLocalSteps(ctx workflow.Context) workflow.Context {
	return workflow.WithValue(ctx, localStepsKey{}, true)
}

// withRegularSteps makes the cheap steps started from ctx regular
// activities again.
func withRegularSteps(ctx workflow.Context) workflow.Context {
	return workflow.WithValue(ctx, localStepsKey{}, false)
}

// localSteps says whether the cheap steps started from ctx are local.
func localSteps(ctx workflow.Context) bool {
	v, _ := ctx.Value(localStepsKey{}).(bool)
	return v
}

// clusterQueueKey holds, in a workflow context, the task queue of the
// destination cluster's activities.
type clusterQueueKey struct{}

// withClusterQueue makes the cluster activities started from ctx run on
// queue; "" keeps the workflow's own queue.
func withClusterQueue(ctx workflow.Context, queue string) workflow.Context {
	if queue == "" {
		return ctx
	}
	return workflow.WithValue(ctx, clusterQueueKey{}, queue)
}

// clusterQueue is the task queue of the cluster activities started from
// ctx ("": the workflow's own).
func clusterQueue(ctx workflow.Context) string {
	q, _ := ctx.Value(clusterQueueKey{}).(string)
	return q
}

// clusterOptions waits for a cancelled activity to end, so that a
// terminated sync cleans up only after its last apply has stopped. Like
// every preset of an activity that touches the destination cluster, it
// runs on the cluster's task queue (withClusterQueue).
func clusterOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           clusterQueue(ctx),
		StartToCloseTimeout: 5 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		WaitForCancellation: true,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, MaximumAttempts: 3,
		},
	})
}

// deleteOptions allows for a foreground deletion that waits until every
// resource is gone.
func deleteOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           clusterQueue(ctx),
		StartToCloseTimeout: 15 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, MaximumAttempts: 5,
		},
	})
}

// waitOptions bounds a wait by timeout in all: its attempts share the
// budget (ScheduleToClose), so a worker that dies mid-wait costs a retry,
// resumed from the heartbeat, not a second full timeout. Attempts are not
// counted: a wait whose worker died or whose heartbeat arrived late on a
// loaded server is retried until the budget is spent.
func waitOptions(ctx workflow.Context, timeout time.Duration) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              clusterQueue(ctx),
		ScheduleToCloseTimeout: timeout,
		StartToCloseTimeout:    timeout,
		HeartbeatTimeout:       45 * time.Second,
		WaitForCancellation:    true,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second},
	})
}

// notifyAttempts bounds a delivery's attempts: a service that stays down
// gets about two minutes of retries, then a recorded failure.
const notifyAttempts = 6

// notifyOptions is for a notification delivery.
func notifyOptions(ctx workflow.Context, id string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		ActivityID:          id,
		StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 2 * time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: notifyAttempts,
		},
	})
}

// evaluateOptions is for the trigger evaluation, a local step: a failure
// skips this evaluation, it does not hold the loop.
func evaluateOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 2},
	})
}

// appSetOptions is for a set's pass: the generators may read Git and
// HTTP services, and each app is read and maybe written; the activity
// heartbeats per app.
func appSetOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Minute,
		HeartbeatTimeout:    2 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, MaximumAttempts: 3,
		},
	})
}

// appSetDeleteOptions is for deleting a set's apps, each of which may
// wait for its resources to go; retried until done.
func appSetDeleteOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    5 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
}
