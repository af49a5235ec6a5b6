package workflows

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/internal/version"
)

// TestReplayCapturedHistories replays the histories captured from the
// end-to-end runs of every release (testdata/histories/<release>) against
// today's workflow code: a change that would break running workflows (a
// change of logic not behind workflow.GetVersion) fails here.
func TestReplayCapturedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("found %d captured histories; capture them with `make histories`", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Join(filepath.Base(filepath.Dir(f)), filepath.Base(f)), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			Register(r)
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
				t.Fatalf("replay %s: %v", f, err)
			}
		})
	}
	for _, typ := range []string{"ApplicationWorkflow", "SyncWorkflow"} {
		if _, err := os.Stat(current(typ + "-1.json")); err != nil {
			t.Fatalf("no %s history captured for release %s: %v", typ, version.Version, err)
		}
	}
}

// current is the path of a history captured for this release.
func current(name string) string {
	return filepath.Join("testdata", "histories", version.Version, name)
}

// The replay test can fail: an ApplicationWorkflow that schedules other
// commands than the captured run did is reported as non-deterministic.
func TestReplayDetectsChangedWorkflow(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(func(ctx workflow.Context, _ AppInput) error {
		return workflow.Sleep(ctx, time.Hour) // not what the history recorded
	}, workflow.RegisterOptions{Name: ApplicationWorkflowName})
	if err := r.ReplayWorkflowHistoryFromJSONFile(nil, current("ApplicationWorkflow-1.json")); err == nil {
		t.Fatal("a changed ApplicationWorkflow replayed without error")
	}
}
