package workflows

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestReplayCapturedHistories replays the histories captured from the
// end-to-end runs (testdata/histories) against today's workflow code: a
// change that would break running workflows (a non-deterministic change
// not behind workflow.GetVersion) fails here.
func TestReplayCapturedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("found %d captured histories; capture them with `make histories`", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			Register(r)
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
				t.Fatalf("replay %s: %v", f, err)
			}
		})
	}
	if _, err := os.Stat(filepath.Join("testdata", "histories", "ApplicationWorkflow-1.json")); err != nil {
		t.Fatalf("no ApplicationWorkflow history captured: %v", err)
	}
}

// The replay test can fail: an ApplicationWorkflow that schedules other
// commands than the captured run did is reported as non-deterministic.
func TestReplayDetectsChangedWorkflow(t *testing.T) {
	f := filepath.Join("testdata", "histories", "ApplicationWorkflow-1.json")
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(func(ctx workflow.Context, _ AppInput) error {
		return workflow.Sleep(ctx, time.Hour) // not what the history recorded
	}, workflow.RegisterOptions{Name: ApplicationWorkflowName})
	if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err == nil {
		t.Fatal("a changed ApplicationWorkflow replayed without error")
	}
}
