package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// wedgedAppQueue is the task queue of wedgedApplication.
const wedgedAppQueue = "api-test-wedged-app"

// wedgedApplication stands in for an application workflow whose task
// fails for good after a refresh, as one whose payloads grew too large
// did: it takes setSpec, then fails every task once refreshed.
func wedgedApplication(ctx workflow.Context, in workflows.AppInput) error {
	if err := answerAsApp(ctx, in.Spec); err != nil {
		return err
	}
	workflow.GetSignalChannel(ctx, workflows.SignalRefresh).Receive(ctx, nil)
	panic("stand-in: payloads too large")
}

// An app whose workflow task keeps failing answers GET with its last
// published state, Unknown, and the task's failure as the message, not
// with a 500; its other reads answer 503 saying where to look.
func TestWedgedAppSaysWhy(t *testing.T) {
	w := sdkworker.New(bed.temporal, wedgedAppQueue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(wedgedApplication, workflow.RegisterOptions{Name: workflows.ApplicationWorkflowName})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	name := "wedged-app"
	t.Cleanup(func() {
		_ = bed.temporal.TerminateWorkflow(context.Background(), workflows.AppWorkflowID(appspec.DefaultProject, name), "", "test over")
		w.Stop()
	})
	en := newEnv(t, func(o *Options) { o.TaskQueue = wedgedAppQueue })
	apps := "/api/v1/applications"
	body := `{"name": "` + name + `", "project": "default", "source": {"repoURL": "https://git.example.com/r.git", "path": "."}, "destination": {"namespace": "web"}}`
	en.admin(request{method: http.MethodPost, path: apps, body: body}).wantStatus(t, http.StatusCreated)
	en.admin(request{method: http.MethodPost, path: apps + "/" + name + "/refresh"}).wantStatus(t, http.StatusAccepted)
	eventually(t, visibilityWait, func() error {
		res := en.admin(request{method: http.MethodGet, path: apps + "/" + name})
		if res.code != http.StatusOK {
			return fmt.Errorf("GET: %d %s", res.code, res.body)
		}
		var v workflows.AppView
		res.decode(t, &v)
		if v.Status.Sync != appspec.SyncUnknown || !strings.Contains(v.Status.Message, "stand-in: payloads too large") || v.Spec.Name != name {
			return fmt.Errorf("view %+v: want Unknown with the task's failure", v)
		}
		return nil
	})
	en.admin(request{method: http.MethodGet, path: apps + "/" + name + "/resources"}).
		wantProblem(t, http.StatusServiceUnavailable, "", "workflow task keeps failing")
}
