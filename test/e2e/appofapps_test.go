package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// appsChart renders one Application per entry of .Values.apps and one
// AppProject per entry of .Values.projects, as argocd-example-apps' apps/.
const appsChart = `{{- range .Values.apps }}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: {{ .name }}
  namespace: argocd
  annotations:
    argocd.argoproj.io/sync-wave: "{{ .wave }}"
  finalizers:
  - resources-finalizer.argocd.argoproj.io
spec:
  project: {{ .project | default "default" }}
  source:
    repoURL: {{ $.Values.repoURL }}
    targetRevision: main
    path: {{ .path }}
  destination:
    server: https://kubernetes.default.svc
    namespace: {{ .namespace }}
  syncPolicy:
    {{- if .auto }}
    automated:
      prune: true
    {{- end }}
    syncOptions:
    - CreateNamespace=true
{{- end }}
{{- range .Values.projects }}
---
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata:
  name: {{ . }}
  namespace: argocd
spec:
  sourceRepos: ["*"]
  destinations:
  - server: "*"
    namespace: "*"
{{- end }}
`

type childApp struct {
	Name      string `json:"name"`
	Wave      int    `json:"wave"`
	Path      string `json:"path"`
	Namespace string `json:"namespace"`
	Auto      bool   `json:"auto,omitempty"`
	Project   string `json:"project,omitempty"`
}

// appsValues is the chart's values.yaml (JSON is YAML).
func appsValues(t *testing.T, repoURL string, apps []childApp, projects ...string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"repoURL": repoURL, "apps": apps, "projects": projects})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func configMapYAML(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  app: " + name + "\n"
}

func parentSync(t *testing.T, name string) (int, workflows.SyncResult) {
	t.Helper()
	var res workflows.SyncResult
	code := call(t, http.MethodPost, "/api/v1/applications/"+name+"/sync", map[string]any{"prune": true}, &res)
	return code, res
}

// Proof 1 of issue 27: an app of apps whose chart renders three child
// Applications in two waves.
func TestAppOfApps(t *testing.T) {
	parent := uniq("aoa")
	repoURL, work := newRepo(t, parent)
	a, b, c := childApp{Name: parent + "-a", Wave: 1, Path: "child-a", Namespace: parent + "-a", Auto: true},
		childApp{Name: parent + "-b", Wave: 1, Path: "child-b", Namespace: parent + "-b"},
		childApp{Name: parent + "-c", Wave: 2, Path: "child-c", Namespace: parent + "-c", Auto: true}
	push(t, work, map[string]string{
		"apps/Chart.yaml":          "apiVersion: v2\nname: apps\nversion: 0.1.0\n",
		"apps/templates/apps.yaml": appsChart,
		"apps/values.yaml":         appsValues(t, repoURL, []childApp{a, b, c}),
		"child-a/configmap.yaml":   configMapYAML("cm-a"),
		"child-b/configmap.yaml":   configMapYAML("cm-b"),
		"child-c/configmap.yaml":   configMapYAML("cm-c"),
		"child-c/configmap-2.yaml": configMapYAML("cm-c2"),
	})
	// Child a exists already, without a parent: the parent adopts it.
	adoptee := appBody(a.Name, repoURL, a.Path, a.Namespace)
	adoptee["syncPolicy"].(map[string]any)["automated"] = map[string]any{"prune": true}
	if code := call(t, http.MethodPost, "/api/v1/applications", adoptee, nil); code != http.StatusCreated {
		t.Fatalf("create %s: status %d", a.Name, code)
	}
	if code := call(t, http.MethodPost, "/api/v1/applications", appBody(parent, repoURL, "apps", parent), nil); code != http.StatusCreated {
		t.Fatalf("create parent: status %d", code)
	}
	if code, res := parentSync(t, parent); code != http.StatusOK || res.Phase != workflows.PhaseSucceeded {
		t.Fatalf("parent sync: status %d, result %+v", code, res)
	}

	// The children exist and record their parent. Wave 1's are Synced and
	// Healthy; the last wave is not waited for (as in Argo CD), so c, which
	// syncs itself, gets there on its own.
	views := map[string]workflows.AppView{}
	for _, ch := range []childApp{a, b, c} {
		v := appView(t, ch.Name)
		if v.Spec.ManagedBy == nil || v.Spec.ManagedBy.App != "default/"+parent || v.Spec.ManagedBy.Cascade != "foreground" {
			t.Fatalf("%s: managedBy = %+v, want default/%s with the foreground cascade", ch.Name, v.Spec.ManagedBy, parent)
		}
		if ch.Wave == 1 && (v.Status.Sync != appspec.SyncSynced || v.Status.Health != appspec.HealthHealthy || len(v.History) == 0) {
			t.Fatalf("%s after the parent's sync: %s/%s, %d syncs", ch.Name, v.Status.Sync, v.Status.Health, len(v.History))
		}
		eventually(t, 60*time.Second, ch.Name+" Synced and Healthy", func() (bool, string) {
			v = appView(t, ch.Name)
			return v.Status.Sync == appspec.SyncSynced && v.Status.Health == appspec.HealthHealthy && len(v.History) > 0,
				fmt.Sprintf("%s/%s, %d syncs: %s", v.Status.Sync, v.Status.Health, len(v.History), v.Status.Message)
		})
		views[ch.Name] = v
	}
	// Wave 2 started only after wave 1's apps were Synced and Healthy:
	// c's first sync began after a's and b's first syncs had finished.
	first := func(v workflows.AppView) workflows.SyncSummary { return v.History[len(v.History)-1] }
	for _, w1 := range []string{a.Name, b.Name} {
		if fin, st := first(views[w1]).FinishedAt, first(views[c.Name]).StartedAt; st.Before(fin) {
			t.Fatalf("wave 2's %s started its sync at %s, before wave 1's %s finished at %s", c.Name, st, w1, fin)
		}
	}
	if !strings.HasPrefix(first(views[b.Name]).Initiator, "app of apps") {
		t.Fatalf("%s (no automated sync) was synced by %q, want the parent", b.Name, first(views[b.Name]).Initiator)
	}
	for ns, cm := range map[string]string{a.Namespace: "cm-a", b.Namespace: "cm-b", c.Namespace: "cm-c"} {
		if _, err := bed.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), cm, metav1.GetOptions{}); err != nil {
			t.Fatalf("configmap %s/%s: %v", ns, cm, err)
		}
	}
	// The parent finds its children, the adopted one too, by the
	// WindlassParent search attribute.
	eventually(t, 30*time.Second, "children listed by their parent", func() (bool, string) {
		resp, err := bed.temporal.ListWorkflow(t.Context(), &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: bed.namespace, Query: workflows.SearchAttrParent + ` = "default/` + parent + `" AND ExecutionStatus = "Running"`,
		})
		if err != nil {
			return false, err.Error()
		}
		var ids []string
		for _, e := range resp.GetExecutions() {
			ids = append(ids, e.GetExecution().GetWorkflowId())
		}
		slices.Sort(ids)
		want := []string{workflows.AppWorkflowID("default", a.Name), workflows.AppWorkflowID("default", b.Name), workflows.AppWorkflowID("default", c.Name)}
		return slices.Equal(ids, want), fmt.Sprint(ids)
	})
	// The parent lists its children with their sync and health; a child's
	// change refreshes its parent (no refresh here).
	eventually(t, 30*time.Second, "children in the parent's resources", func() (bool, string) {
		v := appView(t, parent)
		n := 0
		for _, r := range v.Status.Resources {
			if r.Kind == "Application" && r.Status == appspec.SyncSynced && r.Health == appspec.HealthHealthy {
				n++
			}
		}
		return n == 3 && v.Status.Health == appspec.HealthHealthy, fmt.Sprintf("%d healthy children, parent %s/%s", n, v.Status.Sync, v.Status.Health)
	})

	var tree cluster.ResourceTreeOutput
	if code := call(t, http.MethodGet, "/api/v1/applications/"+parent+"/tree", nil, &tree); code != http.StatusOK {
		t.Fatalf("tree: status %d", code)
	}
	var inTree []string
	for _, n := range tree.Nodes {
		if n.Kind == "Application" && n.Health == appspec.HealthHealthy {
			inTree = append(inTree, n.Name)
		}
	}
	if len(inTree) != 3 {
		t.Fatalf("parent's tree has healthy children %v, want a, b and c; nodes %+v", inTree, tree.Nodes)
	}

	// An API edit of a child is refused, naming the parent.
	body := appBody(c.Name, repoURL, "child-a", c.Namespace)
	var pr map[string]any
	if code := call(t, http.MethodPut, "/api/v1/applications/"+c.Name, body, &pr); code != http.StatusConflict || !strings.Contains(fmt.Sprint(pr["detail"]), parent) {
		t.Fatalf("PUT of a managed child: status %d %v, want 409 naming %s", code, pr, parent)
	}
	if code := call(t, http.MethodPatch, "/api/v1/applications/"+c.Name, map[string]any{"refreshSeconds": 60}, nil); code != http.StatusConflict {
		t.Fatalf("PATCH of a managed child: status %d, want 409", code)
	}
	if code := call(t, http.MethodPost, "/api/v1/applications?upsert=true", body, nil); code != http.StatusConflict {
		t.Fatalf("upsert of a managed child: status %d, want 409", code)
	}
	body["managedBy"] = map[string]any{"app": "default/" + parent}
	if code := call(t, http.MethodPost, "/api/v1/applications", body, nil); code != http.StatusBadRequest {
		t.Fatalf("a body with managedBy: status %d, want 400", code)
	}

	// Child b leaves Git: the parent's pruning sync deletes it and, as its
	// finalizer says, its resources.
	push(t, work, map[string]string{"apps/values.yaml": appsValues(t, repoURL, []childApp{a, c})})
	if code, res := parentSync(t, parent); code != http.StatusOK || res.Phase != workflows.PhaseSucceeded {
		t.Fatalf("parent sync without b: status %d, result %+v", code, res)
	}
	eventually(t, 30*time.Second, "child b's workflow completed", func() (bool, string) {
		d, err := bed.temporal.DescribeWorkflowExecution(t.Context(), workflows.AppWorkflowID("default", b.Name), "")
		if err != nil {
			return false, err.Error()
		}
		st := d.GetWorkflowExecutionInfo().GetStatus().String()
		return st == "Completed", st
	})
	if _, err := bed.kube.CoreV1().ConfigMaps(b.Namespace).Get(t.Context(), "cm-b", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("child b's configmap after its prune: %v, want not found", err)
	}

	// A cycle: the parent declares itself.
	self := childApp{Name: parent, Wave: 3, Path: "apps", Namespace: parent}
	push(t, work, map[string]string{"apps/values.yaml": appsValues(t, repoURL, []childApp{a, c, self})})
	if code, res := parentSync(t, parent); code == http.StatusOK || !strings.Contains(res.Message, "cycle") || !strings.Contains(res.Message, parent) {
		t.Fatalf("sync of a cycle: status %d, result %+v, want a failure naming the cycle", code, res)
	}

	// A name clash: an app of the same name in another project.
	other := uniq("other")
	if code := call(t, http.MethodPost, "/api/v1/applications", appBody(other, repoURL, "child-a", other), nil); code != http.StatusCreated {
		t.Fatalf("create %s: status %d", other, code)
	}
	eventually(t, 30*time.Second, "app "+other+" compared", func() (bool, string) {
		v := appView(t, other)
		return !v.Status.ReconciledAt.IsZero(), v.Status.Message
	})
	proj := parent + "-proj"
	clash := childApp{Name: other, Wave: 3, Path: "child-a", Namespace: other, Project: proj}
	push(t, work, map[string]string{"apps/values.yaml": appsValues(t, repoURL, []childApp{a, c, clash}, proj)})
	if code, res := parentSync(t, parent); code == http.StatusOK || !strings.Contains(res.Message, "taken by application default/"+other) {
		t.Fatalf("sync of a name clash: status %d, result %+v, want a failure naming default/%s", code, res, other)
	}
}

// With self-heal on, a parent puts back a child's spec that was changed
// outside Git (here through Temporal, as the API refuses it).
func TestAppOfAppsSelfHeal(t *testing.T) {
	parent := uniq("aoash")
	repoURL, work := newRepo(t, parent)
	child := childApp{Name: parent + "-a", Wave: 0, Path: "child-a", Namespace: parent + "-a", Auto: true}
	push(t, work, map[string]string{
		"apps/Chart.yaml":          "apiVersion: v2\nname: apps\nversion: 0.1.0\n",
		"apps/templates/apps.yaml": appsChart,
		"apps/values.yaml":         appsValues(t, repoURL, []childApp{child}),
		"child-a/configmap.yaml":   configMapYAML("cm-a"),
	})
	body := appBody(parent, repoURL, "apps", parent)
	body["syncPolicy"].(map[string]any)["automated"] = map[string]any{"prune": true, "selfHeal": true}
	if code := call(t, http.MethodPost, "/api/v1/applications", body, nil); code != http.StatusCreated {
		t.Fatalf("create parent: status %d", code)
	}
	eventually(t, 60*time.Second, "child created and synced", func() (bool, string) {
		if code := call(t, http.MethodGet, "/api/v1/applications/"+child.Name, nil, nil); code != http.StatusOK {
			return false, fmt.Sprint("status ", code)
		}
		v := appView(t, child.Name)
		return v.Spec.ManagedBy != nil && v.Status.Sync == appspec.SyncSynced, string(v.Status.Sync)
	})
	spec := appView(t, child.Name).Spec
	spec.RefreshSeconds = 77
	h, err := bed.temporal.UpdateWorkflow(t.Context(), client.UpdateWorkflowOptions{
		WorkflowID: workflows.AppWorkflowID("default", child.Name), UpdateName: workflows.UpdateSetSpec, Args: []any{spec},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(t.Context(), nil)
	}
	if err != nil {
		t.Fatalf("set the child's spec: %v", err)
	}
	eventually(t, 60*time.Second, "child's spec restored from Git", func() (bool, string) {
		call(t, http.MethodPost, "/api/v1/applications/"+parent+"/refresh", nil, nil)
		v := appView(t, child.Name)
		return v.Spec.RefreshSeconds == 0, fmt.Sprint("refreshSeconds ", v.Spec.RefreshSeconds)
	})
}
