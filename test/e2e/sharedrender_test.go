package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// Two apps of one directory path at one commit, in two namespaces (what an
// ApplicationSet generates): the second renders nothing. Its first pass
// finds the first app's manifests in the cache and compares them, its
// automated sync applies them in its own namespace, and its workflow
// schedules no render activity.
func TestAppsOfOnePathShareTheirRender(t *testing.T) {
	repoURL, work := newRepo(t, uniq("shared"))
	push(t, work, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1"))
	names := []string{uniq("share-a"), uniq("share-b")}
	for _, name := range names {
		body := appBody(name, repoURL, "guestbook", name)
		body["syncPolicy"].(map[string]any)["automated"] = map[string]any{}
		if code := call(t, http.MethodPost, "/api/v1/applications", body, nil); code != http.StatusCreated {
			t.Fatalf("create %s: status %d", name, code)
		}
		eventually(t, 60*time.Second, name+" auto-synced and healthy", func() (bool, string) {
			v := appView(t, name)
			return v.Status.Sync == appspec.SyncSynced && v.Status.Health == appspec.HealthHealthy, string(v.Status.Sync) + "/" + string(v.Status.Health)
		})
		if _, ok := deploymentAvailable(t, name); !ok {
			t.Fatalf("%s: the guestbook is not available in its namespace", name)
		}
	}
	renders := func(name string) int {
		n := 0
		it := bed.temporal.GetWorkflowHistory(t.Context(), workflows.AppWorkflowID("default", name), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == render.RenderName {
				n++
			}
		}
		return n
	}
	if n := renders(names[0]); n != 1 {
		t.Errorf("the first app scheduled %d renders, want 1", n)
	}
	if n := renders(names[1]); n != 0 {
		t.Errorf("the second app scheduled %d renders, want none: the cache held its manifests", n)
	}
	if dir := os.Getenv("WINDLASS_UPDATE_HISTORIES"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := writeHistory(t.Context(), filepath.Join(dir, "ApplicationWorkflow-sharedrender.json"), workflows.AppWorkflowID("default", names[1]), ""); err != nil {
			t.Fatal(err)
		}
	}
}
