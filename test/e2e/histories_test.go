package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/windlass-cd/windlass/workflows"
)

// captureHistories writes up to perType workflow histories of each
// Windlass workflow type into dir, as `temporal workflow show --output
// json` would. The replay test in workflows/ replays them, so that a
// change that breaks running workflows fails CI. Run with
// WINDLASS_UPDATE_HISTORIES=<repo>/workflows/testdata/histories.
func captureHistories(ctx context.Context, dir string, perType int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	resp, err := bed.temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{PageSize: 1000})
	if err != nil {
		return err
	}
	// The richest histories of a reasonable size first, leaving out the
	// signal-flood test's runs.
	var execs []*workflowpb.WorkflowExecutionInfo
	for _, e := range resp.Executions {
		if e.GetTaskQueue() == signalsQueue || e.GetHistoryLength() > 600 {
			continue
		}
		execs = append(execs, e)
	}
	sort.SliceStable(execs, func(i, j int) bool {
		if execs[i].GetHistoryLength() != execs[j].GetHistoryLength() {
			return execs[i].GetHistoryLength() > execs[j].GetHistoryLength()
		}
		return execs[i].GetExecution().GetWorkflowId() < execs[j].GetExecution().GetWorkflowId()
	})
	count := map[string]int{}
	for _, e := range execs {
		typ := e.GetType().GetName()
		switch typ {
		case workflows.ApplicationWorkflowName, workflows.SyncWorkflowName, workflows.ClusterWatchWorkflowName, workflows.SelfHealSweepWorkflowName:
		default:
			continue
		}
		if count[typ] >= perType {
			continue
		}
		count[typ]++
		name := fmt.Sprintf("%s-%d.json", strings.TrimPrefix(typ, "windlass."), count[typ])
		if err := writeHistory(ctx, filepath.Join(dir, name), e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId()); err != nil {
			return err
		}
	}
	return nil
}

// writeHistory writes the history of a workflow run (runID "": the
// latest) to file, as `temporal workflow show --output json` would.
func writeHistory(ctx context.Context, file, workflowID, runID string) error {
	var hist historypb.History
	it := bed.temporal.GetWorkflowHistory(ctx, workflowID, runID, false, 0)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return err
		}
		hist.Events = append(hist.Events, ev)
	}
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: " "}.Marshal(&hist)
	if err != nil {
		return err
	}
	return os.WriteFile(file, b, 0o644)
}

// scanHistories calls found for each of needles that an event of a
// workflow of c holds, open or closed, with the workflow and event; it
// returns how many events it scanned.
func scanHistories(t *testing.T, c client.Client, needles [][]byte, found func(i int, where string)) int {
	t.Helper()
	var token []byte
	scanned := 0
	for {
		resp, err := c.ListWorkflow(t.Context(), &workflowservice.ListWorkflowExecutionsRequest{PageSize: 200, NextPageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range resp.Executions {
			it := c.GetWorkflowHistory(t.Context(), e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId(), false, 0)
			for it.HasNext() {
				ev, err := it.Next()
				if err != nil {
					t.Fatal(err)
				}
				b, err := ev.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				for i, n := range needles {
					if bytes.Contains(b, n) {
						found(i, fmt.Sprintf("%s (event %d, %s)", e.GetExecution().GetWorkflowId(), ev.GetEventId(), ev.GetEventType()))
					}
				}
				scanned++
			}
		}
		if token = resp.NextPageToken; len(token) == 0 {
			return scanned
		}
	}
}
