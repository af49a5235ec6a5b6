package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// stubAppQueue is the task queue of stubApplication.
const stubAppQueue = "api-test-stub-app"

// stubApplication stands in for the application workflow where a test
// needs created apps that answer: it takes setSpec and answers status.
func stubApplication(ctx workflow.Context, in workflows.AppInput) error {
	if err := answerAsApp(ctx, in.Spec); err != nil {
		return err
	}
	return workflow.Await(ctx, func() bool { return false })
}

// answerAsApp sets the handlers a stand-in application workflow answers
// with: setSpec, and status.
func answerAsApp(ctx workflow.Context, spec appspec.Application) error {
	err := workflow.SetUpdateHandler(ctx, workflows.UpdateSetSpec, func(_ workflow.Context, s appspec.Application) (workflows.AppView, error) {
		spec = s
		return workflows.AppView{Spec: s}, nil
	})
	if err != nil {
		return err
	}
	return workflow.SetQueryHandler(ctx, workflows.QueryStatus, func() (workflows.AppView, error) {
		return workflows.AppView{Spec: spec}, nil
	})
}

// startStubApps runs stubApplication on stubAppQueue for the test, and
// terminates the apps named at its end, so that other tests' lists do
// not see them.
func startStubApps(t *testing.T, project string, names ...string) {
	t.Helper()
	w := sdkworker.New(bed.temporal, stubAppQueue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(stubApplication, workflow.RegisterOptions{Name: workflows.ApplicationWorkflowName})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range names {
			_ = bed.temporal.TerminateWorkflow(context.Background(), workflows.AppWorkflowID(project, n), "", "test over")
		}
		w.Stop()
	})
}

// TestDottedAppNames creates, gets and lists applications named as Argo
// CD's app-of-apps charts name them: with dots, up to 253 characters.
func TestDottedAppNames(t *testing.T) {
	dotted := "example.guestbook"
	long := strings.Repeat(strings.Repeat("a", 62)+".", 4)[:appspec.MaxAppName-1] + "z"
	startStubApps(t, appspec.DefaultProject, dotted, long)
	en := newEnv(t, func(o *Options) { o.TaskQueue = stubAppQueue })

	argoApp := func(name string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: " + name + "\nspec:\n" +
			"  source: {repoURL: https://git.example.com/default/guestbook.git, path: .}\n  destination: {namespace: guestbook}\n"
	}
	wantName := func(name string) func(*testing.T, response) {
		return func(t *testing.T, res response) {
			var v workflows.AppView
			res.decode(t, &v)
			if v.Spec.Name != name || v.Spec.Project != appspec.DefaultProject {
				t.Fatalf("spec names %s/%s, want default/%s", v.Spec.Project, v.Spec.Name, name)
			}
		}
	}
	apps := "/api/v1/applications"
	runSteps(t, en, []step{
		{name: "create dotted", req: request{method: http.MethodPost, path: apps, body: argoApp(dotted)},
			status: http.StatusCreated, check: wantName(dotted)},
		{name: "create dotted again", req: request{method: http.MethodPost, path: apps, body: argoApp(dotted)},
			status: http.StatusConflict, detail: "application default/" + dotted + " already exists"},
		{name: "upsert dotted", req: request{method: http.MethodPost, path: apps + "?upsert=true", body: argoApp(dotted)},
			status: http.StatusOK, check: wantName(dotted)},
		{name: "create 253 characters", req: request{method: http.MethodPost, path: apps, body: argoApp(long)},
			status: http.StatusCreated, check: wantName(long)},
		{name: "create 254 characters", req: request{method: http.MethodPost, path: apps, body: argoApp(long + "z")},
			status: http.StatusBadRequest, field: "metadata.name", detail: "at most 253"},
		{name: "create empty part", req: request{method: http.MethodPost, path: apps, body: argoApp("example..guestbook")},
			status: http.StatusBadRequest, field: "metadata.name", detail: "DNS subdomain"},
		{name: "get dotted", req: request{method: http.MethodGet, path: apps + "/" + dotted}, status: http.StatusOK, check: wantName(dotted)},
		{name: "get 253 characters", req: request{method: http.MethodGet, path: apps + "/" + long}, status: http.StatusOK, check: wantName(long)},
		{name: "get empty part", req: request{method: http.MethodGet, path: apps + "/example..guestbook"},
			status: http.StatusBadRequest, field: "name", detail: "DNS subdomain"},
		{name: "replace dotted", req: request{method: http.MethodPut, path: apps + "/" + dotted, body: argoApp(dotted)},
			status: http.StatusOK, check: wantName(dotted)},
	})
	t.Run("list", func(t *testing.T) {
		eventually(t, visibilityWait, func() error {
			got := appNames(t, en.admin(request{method: http.MethodGet, path: apps}))
			for _, n := range []string{dotted, long} {
				if !slices.Contains(got, appspec.DefaultProject+"/"+n) {
					return fmt.Errorf("the list %v lacks default/%s", got, n)
				}
			}
			return nil
		})
		res := en.admin(request{method: http.MethodGet, path: apps + "?sort=name"})
		if got := appNames(t, res); !slices.Contains(got, "default/"+dotted) {
			t.Fatalf("sorted list %v lacks default/%s", got, dotted)
		}
	})
}
