package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/manifest"
	"github.com/windlass-cd/windlass/workflows"
)

// createProject creates a project that permits every repository and the
// destination namespaces ns (a pattern).
func createProject(t *testing.T, name, ns string) {
	t.Helper()
	p := map[string]any{"name": name, "sourceRepos": []string{"*"},
		"destinations": []map[string]string{{"server": "*", "namespace": ns}}}
	if code := call(t, http.MethodPost, "/api/v1/projects", p, nil); code != http.StatusCreated {
		t.Fatalf("create project %s: status %d", name, code)
	}
}

// liveUIDs are the UIDs of the guestbook's Deployment and Service.
func liveUIDs(t *testing.T, ns string) [2]types.UID {
	t.Helper()
	d, err := bed.kube.AppsV1().Deployments(ns).Get(t.Context(), "guestbook-ui", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := bed.kube.CoreV1().Services(ns).Get(t.Context(), "guestbook-ui", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return [2]types.UID{d.UID, s.UID}
}

// An app synced twice in project A moves to B: its resources stay (same
// objects, now tracked for B), /syncs still lists both syncs, a rollback
// to the first works and runs as a sync of B. A project that does not
// exist or refuses the destination refuses the move, and of two moves at
// once one wins.
func TestMoveToAnotherProject(t *testing.T) {
	projA, projB, strict := uniq("mv-a"), uniq("mv-b"), uniq("mv-strict")
	createProject(t, projA, "*")
	createProject(t, projB, "*")
	createProject(t, strict, "allowed-*")
	ns, name := uniq("mv"), uniq("mover")
	inA, inB := "/api/v1/applications/"+name+"?project="+projA, "/api/v1/applications/"+name+"?project="+projB
	repoURL, work := newRepo(t, name)
	push(t, work, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1"))
	body := appBody(name, repoURL, "guestbook", ns)
	body["project"] = projA
	if code := call(t, http.MethodPost, "/api/v1/applications", body, nil); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	var first, second workflows.SyncResult
	if code := call(t, http.MethodPost, "/api/v1/applications/"+name+"/sync?project="+projA, nil, &first); code != http.StatusOK {
		t.Fatalf("first sync: status %d %+v", code, first)
	}
	push(t, work, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.2"))
	call(t, http.MethodPost, "/api/v1/applications/"+name+"/refresh?project="+projA, nil, nil)
	if code := call(t, http.MethodPost, "/api/v1/applications/"+name+"/sync?project="+projA, nil, &second); code != http.StatusOK || second.SHA == first.SHA {
		t.Fatalf("second sync: status %d %+v", code, second)
	}
	eventually(t, 30*time.Second, "image 0.2 live", func() (bool, string) { i := image(t, ns); return strings.HasSuffix(i, ":0.2"), i })
	uids := liveUIDs(t, ns)

	// Refused moves change nothing.
	for _, tc := range []struct {
		project, want, field string
	}{
		{uniq("nowhere"), "does not exist", "project"},
		{strict, "not permitted", "destination"},
	} {
		var pr api.Problem
		if code := call(t, http.MethodPatch, inA, map[string]any{"project": tc.project}, &pr); code != http.StatusForbidden ||
			!strings.Contains(pr.Detail, tc.want) || pr.Field != tc.field {
			t.Fatalf("move to %s: status %d %+v, want 403 %q on %s", tc.project, code, pr, tc.want, tc.field)
		}
	}
	var still workflows.AppView
	if code := call(t, http.MethodGet, inA, nil, &still); code != http.StatusOK || still.Spec.Project != projA || len(still.History) != 2 {
		t.Fatalf("after refused moves: status %d, project %s, %d syncs", code, still.Spec.Project, len(still.History))
	}

	// Two moves at once: one moves the app, the other is refused.
	codes := make([]int, 2)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Go(func() { codes[i] = call(t, http.MethodPatch, inA, map[string]any{"project": projB}, nil) })
	}
	wg.Wait()
	slices.Sort(codes)
	if codes[0] != http.StatusOK || (codes[1] != http.StatusConflict && codes[1] != http.StatusNotFound) {
		t.Fatalf("two concurrent moves answered %v, want one 200 and one 409 or 404", codes)
	}

	// The old name says where the app went.
	var gone api.Problem
	if code := call(t, http.MethodGet, inA, nil, &gone); code != http.StatusNotFound || !strings.Contains(gone.Detail, "moved") {
		t.Fatalf("old name: status %d %+v, want 404 naming the move", code, gone)
	}
	eventually(t, 60*time.Second, "the moved app Synced with its objects tracked for B", func() (bool, string) {
		var v workflows.AppView
		call(t, http.MethodGet, inB, nil, &v)
		d, err := bed.kube.AppsV1().Deployments(ns).Get(t.Context(), "guestbook-ui", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		track := d.Annotations[manifest.TrackingAnnotation]
		return v.Status.Sync == appspec.SyncSynced && strings.HasPrefix(track, projB+"/"+name+":"),
			fmt.Sprintf("%s, tracking %s, message %q", v.Status.Sync, track, v.Status.Message)
	})
	if got := liveUIDs(t, ns); got != uids {
		t.Fatalf("objects re-created by the move: %v, were %v", got, uids)
	}
	var moved workflows.AppView
	call(t, http.MethodGet, inB, nil, &moved)
	if moved.Spec.Project != projB || len(moved.History) != 2 || len(moved.Moves) != 1 || moved.Moves[0].Project != projA {
		t.Fatalf("moved app: project %s, history %+v, moves %+v", moved.Spec.Project, moved.History, moved.Moves)
	}

	// The syncs run in A are still listed, and a rollback reaches them.
	syncIDs := func() []string {
		var list api.SyncList
		call(t, http.MethodGet, "/api/v1/applications/"+name+"/syncs?project="+projB, nil, &list)
		var ids []string
		for _, it := range list.Items {
			ids = append(ids, it.ID)
		}
		slices.Sort(ids)
		return ids
	}
	eventually(t, 30*time.Second, "both syncs listed", func() (bool, string) {
		ids := syncIDs()
		return slices.Equal(ids, []string{first.ID, second.ID}), fmt.Sprint(ids)
	})
	var rb workflows.SyncResult
	if code := call(t, http.MethodPost, "/api/v1/applications/"+name+"/rollback?project="+projB, map[string]any{"id": first.ID}, &rb); code != http.StatusOK ||
		rb.SHA != first.SHA || rb.ID != workflows.SyncWorkflowID(projB, name, 3) {
		t.Fatalf("rollback: status %d %+v, want sync 3 of %s at %s", code, rb, projB, first.SHA)
	}
	eventually(t, 30*time.Second, "image 0.1 live again", func() (bool, string) { i := image(t, ns); return strings.HasSuffix(i, ":0.1"), i })
	eventually(t, 30*time.Second, "three syncs listed", func() (bool, string) {
		ids := syncIDs()
		return len(ids) == 3 && slices.Contains(ids, rb.ID), fmt.Sprint(ids)
	})
	var events api.SyncEvents
	if code := call(t, http.MethodGet, "/api/v1/applications/"+name+"/syncs/1/events?project="+projB, nil, &events); code != http.StatusOK || events.ID != first.ID {
		t.Fatalf("events of sync 1: status %d, id %s", code, events.ID)
	}
	if got := liveUIDs(t, ns); got != uids {
		t.Fatalf("objects re-created after the move: %v, were %v", got, uids)
	}
}
