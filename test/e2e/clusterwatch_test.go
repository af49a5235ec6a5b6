package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

const pdbYAML = `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  minAvailable: 1
  selector:
    matchLabels:
      app: web
`

// A cluster registered through the API gets its own drift watch: a
// self-healing app deploying there is healed after an edit without any
// refresh call. (The registered cluster is the test bed's API server under
// its own URL; the app manages a kind no in-cluster app of these tests
// does, so only the registered cluster's watch can notice the edit.)
func TestRegisteredClusterDriftWatch(t *testing.T) {
	cfg := bed.env.Cluster.Config
	server, cluster := cfg.Host, uniq("registered")
	body := map[string]any{"name": cluster, "server": server, "caData": pemOf(t, cfg.CAData, cfg.CAFile),
		"certData": pemOf(t, cfg.CertData, cfg.CertFile), "keyData": pemOf(t, cfg.KeyData, cfg.KeyFile)}
	var problem map[string]any
	if code := call(t, http.MethodPost, "/api/v1/clusters", body, &problem); code != http.StatusCreated {
		t.Fatalf("register the cluster: status %d: %v", code, problem)
	}
	eventually(t, 30*time.Second, "the registered cluster's watch running", func() (bool, string) {
		d, err := bed.temporal.DescribeWorkflowExecution(t.Context(), workflows.ClusterWatchWorkflowID(server), "")
		if err != nil {
			return false, err.Error()
		}
		st := d.GetWorkflowExecutionInfo().GetStatus()
		return st == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, st.String()
	})

	ns, name := uniq("regw"), uniq("regw")
	repoURL, work := newRepo(t, name)
	push(t, work, map[string]string{"pdb/pdb.yaml": pdbYAML})
	app := appBody(name, repoURL, "pdb", ns)
	app["destination"] = map[string]any{"server": server, "namespace": ns}
	app["syncPolicy"].(map[string]any)["automated"] = map[string]any{"selfHeal": true, "prune": true}
	if code := call(t, http.MethodPost, "/api/v1/applications", app, nil); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	// Settled: synced, and compared again after the sync, so that only a
	// watch (or the 10-minute refresh) can notice the edit below.
	eventually(t, time.Minute, "auto-synced, healthy and compared after the sync", func() (bool, string) {
		v := appView(t, name)
		settled := v.Status.Sync == appspec.SyncSynced && v.Status.Health == appspec.HealthHealthy && v.Status.Operation == nil &&
			len(v.History) > 0 && v.Status.ReconciledAt.After(v.History[0].FinishedAt)
		return settled, string(v.Status.Sync) + "/" + string(v.Status.Health) + " " + v.Status.Message
	})
	// The app reports its kinds to the registered cluster's watch after
	// its reconcile, and the watch then starts its informers: an edit
	// made before they have listed is no event. So edit again, to a new
	// value, while the edit is not healed.
	edits := 0
	edit := func() {
		edits++
		patch := fmt.Appendf(nil, `{"spec":{"minAvailable":%d}}`, edits+1)
		if _, err := bed.kube.PolicyV1().PodDisruptionBudgets(ns).Patch(t.Context(), "web", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
			t.Fatal(err)
		}
	}
	before := appView(t, name).Refreshes
	edit()
	lastEdit := time.Now()
	eventually(t, 90*time.Second, "the edit healed by the watch", func() (bool, string) {
		p, err := bed.kube.PolicyV1().PodDisruptionBudgets(ns).Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if p.Spec.MinAvailable.IntValue() == 1 {
			return true, ""
		}
		if time.Since(lastEdit) > 15*time.Second {
			edit()
			lastEdit = time.Now()
		}
		return false, fmt.Sprintf("minAvailable %s after %d edits", p.Spec.MinAvailable.String(), edits)
	})
	// The watch told the app (a refresh signal): nothing else sends one
	// here (no webhook; the sweep runs every 5 min, the refresh timer
	// every 10).
	eventually(t, 30*time.Second, "the watch's refresh signal counted", func() (bool, string) {
		n := appView(t, name).Refreshes
		return n > before, fmt.Sprint(n)
	})
	if code := call(t, http.MethodDelete, "/api/v1/applications/"+name, nil, nil); code >= 300 {
		t.Errorf("delete the app: status %d", code)
	}
}
