package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/api/workflowservice/v1"
)

// Counter counts workflow executions in Temporal visibility; a
// client.Client is one.
type Counter interface {
	CountWorkflow(ctx context.Context, req *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error)
}

// AppsQuery says how applications are counted by status. Temporal's SQL
// visibility groups only by ExecutionStatus, so each status pair is one
// count query; statuses with no apps are not broken down further.
type AppsQuery struct {
	Namespace string
	// Base selects the running applications, e.g.
	// "WorkflowType = 'x' AND ExecutionStatus = 'Running'".
	Base string
	// SyncAttr and HealthAttr are the Keyword search attributes holding
	// the statuses; SyncValues and HealthValues their values.
	SyncAttr, HealthAttr     string
	SyncValues, HealthValues []string
}

// RefreshApps counts the applications by status and sets windlass_apps.
// On error the previous values stay.
func (m *Metrics) RefreshApps(ctx context.Context, c Counter, q AppsQuery) error {
	count := func(where string) (int64, error) {
		resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: q.Namespace, Query: where})
		if err != nil {
			return 0, fmt.Errorf("count applications (%s): %w", where, err)
		}
		return resp.GetCount(), nil
	}
	counts := map[[2]string]int64{}
	for _, s := range q.SyncValues {
		bySync := fmt.Sprintf("%s AND %s = '%s'", q.Base, q.SyncAttr, s)
		n, err := count(bySync)
		if err != nil {
			return err
		}
		for _, h := range q.HealthValues {
			if n == 0 {
				counts[[2]string{s, h}] = 0
				continue
			}
			if counts[[2]string{s, h}], err = count(fmt.Sprintf("%s AND %s = '%s'", bySync, q.HealthAttr, h)); err != nil {
				return err
			}
		}
	}
	for k, n := range counts {
		m.apps.WithLabelValues(k[0], k[1]).Set(float64(n))
	}
	return nil
}

const msgAppsCountFailed = "counting applications for metrics failed"

// WatchApps refreshes windlass_apps every interval until ctx ends.
func (m *Metrics) WatchApps(ctx context.Context, c Counter, q AppsQuery, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := m.RefreshApps(ctx, c, q); err != nil && ctx.Err() == nil {
			log.Warn(msgAppsCountFailed, "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
