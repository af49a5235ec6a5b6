package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

const inspectSecretYAML = `apiVersion: v1
kind: Secret
metadata:
  name: db
stringData:
  password: %s
`

// The manifests, tree, diff and events endpoints show an app's desired and
// live state; Secret values never appear; manifests that expired from the
// cache are rendered again on demand.
func TestInspectEndpoints(t *testing.T) {
	ns, name := uniq("insp"), uniq("insp")
	secret := fmt.Sprintf("e2e-inspect-secret-%d", time.Now().UnixNano())
	repoURL, work := newRepo(t, name)
	files := guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1")
	files["guestbook/secret.yaml"] = fmt.Sprintf(inspectSecretYAML, secret)
	push(t, work, files)
	if code := call(t, http.MethodPost, "/api/v1/applications", appBody(name, repoURL, "guestbook", ns), nil); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	eventually(t, time.Minute, "the first comparison", func() (bool, string) {
		v := appView(t, name)
		return v.Status.SHA != "", string(v.Status.Sync)
	})
	// push commits with the message "update": its subject follows the SHA.
	if m := appView(t, name).Status.RevisionMetadata; m == nil || m.Message != "update" || m.Author == "" || m.Date.IsZero() {
		t.Errorf("status.revisionMetadata %+v: want the commit's subject, author and date", m)
	}
	syncApp(t, name)
	base := "/api/v1/applications/" + name
	eventually(t, 30*time.Second, "the list row shows the last sync and the commit's subject", func() (bool, string) {
		var list api.AppList
		call(t, http.MethodGet, "/api/v1/applications?search="+name, nil, &list)
		ok := len(list.Items) == 1 && !list.Items[0].LastSyncedAt.IsZero() && list.Items[0].LastSyncPhase == string(workflows.PhaseSucceeded) &&
			list.Items[0].RevisionMessage == "update"
		return ok, fmt.Sprintf("%+v", list.Items)
	})
	eventually(t, 30*time.Second, "the full history shows the sync's initiator, revision and commit subject", func() (bool, string) {
		var syncs api.SyncList
		call(t, http.MethodGet, base+"/syncs", nil, &syncs)
		ok := len(syncs.Items) == 1 && syncs.Items[0].Initiator != "" && syncs.Items[0].Revision == "main" && len(syncs.Items[0].SHA) == 40 &&
			syncs.Items[0].RevisionMessage == "update"
		return ok, fmt.Sprintf("%+v", syncs.Items)
	})

	// get fetches path, checks the status and that the body never shows
	// the secret, and decodes it into out.
	get := func(path string, out any) int {
		t.Helper()
		var raw json.RawMessage
		code := call(t, http.MethodGet, path, nil, &raw)
		if strings.Contains(string(raw), secret) {
			t.Fatalf("GET %s shows the Secret's value: %s", path, raw)
		}
		if out != nil && code == http.StatusOK {
			if err := json.Unmarshal(raw, out); err != nil {
				t.Fatal(err)
			}
		}
		return code
	}

	var mf api.ManifestsView
	if code := get(base+"/manifests", &mf); code != http.StatusOK || len(mf.Manifests) != 3 || mf.SHA == "" {
		t.Fatalf("manifests: status %d, %d objects, sha %q", code, len(mf.Manifests), mf.SHA)
	}

	eventually(t, time.Minute, "the tree Deployment → ReplicaSet → Pod", func() (bool, string) {
		var tree cluster.ResourceTreeOutput
		get(base+"/tree", &tree)
		kinds := map[string]string{} // uid → kind
		for _, n := range tree.Nodes {
			kinds[n.UID] = n.Kind
		}
		var chain []string
		for _, n := range tree.Nodes {
			if n.Kind == "Pod" && len(n.Parents) == 1 && kinds[n.Parents[0]] == "ReplicaSet" {
				chain = append(chain, "pod")
			}
			if n.Kind == "ReplicaSet" && len(n.Parents) == 1 && kinds[n.Parents[0]] == "Deployment" {
				chain = append(chain, "rs")
			}
		}
		return len(chain) >= 2, fmt.Sprintf("%+v", tree.Nodes)
	})

	// Someone scales the Deployment and edits the Secret.
	scale := []byte(`{"spec":{"replicas":3}}`)
	if _, err := bed.kube.AppsV1().Deployments(ns).Patch(t.Context(), "guestbook-ui", types.MergePatchType, scale, metav1.PatchOptions{FieldManager: "kubectl-scale"}); err != nil {
		t.Fatal(err)
	}
	edit := []byte(`{"stringData":{"password":"` + secret + `-edited"}}`)
	if _, err := bed.kube.CoreV1().Secrets(ns).Patch(t.Context(), "db", types.MergePatchType, edit, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	var diff api.DiffView
	if code := get(base+"/diff", &diff); code != http.StatusOK || diff.Sync != appspec.SyncOutOfSync {
		t.Fatalf("diff: status %d, sync %s", code, diff.Sync)
	}
	byKind := map[string]cluster.ResourceDiff{}
	for _, r := range diff.Resources {
		byKind[r.Kind] = r
	}
	dep, sec, svc := byKind["Deployment"], byKind["Secret"], byKind["Service"]
	checks := []struct {
		what string
		ok   bool
	}{
		{"the Deployment's diff shows the replicas", dep.Status == appspec.SyncOutOfSync && strings.Contains(dep.Diff, "-  replicas: 3") && strings.Contains(dep.Diff, "+  replicas: 1")},
		{"the Deployment's live and desired objects", dep.Live != nil && dep.Desired != nil},
		{"the Secret differs, masked", sec.Status == appspec.SyncOutOfSync && strings.Contains(sec.Diff, "password: ++++")},
		{"the Service is Synced without a diff", svc.Status == appspec.SyncSynced && svc.Diff == ""},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: %+v", c.what, diff.Resources)
		}
	}
	var one api.DiffView
	if get(base+"/diff?kind=Service", &one); len(one.Resources) != 1 || one.Resources[0].Kind != "Service" {
		t.Errorf("diff?kind=Service: %+v", one.Resources)
	}

	eventually(t, time.Minute, "Kubernetes events of the app's objects", func() (bool, string) {
		var evs api.EventsView
		get(base+"/events", &evs)
		for _, e := range evs.Events {
			if e.Source == api.SourceKubernetes && e.Object.Kind == "Deployment" && e.Reason == "ScalingReplicaSet" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", evs.Events)
	})

	// The cache loses the manifests: the API asks the app to render them
	// again and answers 503 until they are back.
	evictManifests(t, name)
	if code := get(base+"/manifests", nil); code != http.StatusServiceUnavailable {
		t.Fatalf("manifests after eviction: status %d, want 503", code)
	}
	eventually(t, time.Minute, "the manifests rendered again", func() (bool, string) {
		code := get(base+"/manifests", nil)
		return code == http.StatusOK, fmt.Sprint(code)
	})
	if code := callAs(t, "", http.MethodGet, base+"/diff", nil, nil); code != http.StatusUnauthorized {
		t.Fatalf("anonymous diff: status %d", code)
	}
}
