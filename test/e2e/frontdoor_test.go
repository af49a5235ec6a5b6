package e2e

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/windlass-cd/windlass/api/frontdoor"
	"github.com/windlass-cd/windlass/internal/temporalx"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/workflows"
)

// frontDoorProject is an Argo CD AppProject allowing repoURL into dest.
func frontDoorProject(ns, name, repoURL, dest string) *unstructured.Unstructured {
	var m map[string]any
	doc := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: %s, namespace: %s}
spec:
  sourceRepos: [%q]
  destinations: [{server: https://kubernetes.default.svc, namespace: %s}]
  clusterResourceWhitelist: [{group: '', kind: Namespace}]
`, name, ns, repoURL, dest)
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		panic(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// frontDoorApp is an Argo CD Application of project with the resources
// finalizer and automated sync, as a user would kubectl apply it.
func frontDoorApp(ns, name, project, repoURL, dest string) *unstructured.Unstructured {
	var m map[string]any
	doc := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  namespace: %s
  finalizers: [resources-finalizer.argocd.argoproj.io]
spec:
  project: %s
  source: {repoURL: %q, path: guestbook, targetRevision: main}
  destination: {server: https://kubernetes.default.svc, namespace: %s}
  syncPolicy:
    automated: {prune: true}
    syncOptions: [CreateNamespace=true]
`, name, ns, project, repoURL, dest)
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		panic(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// Proof 3 of issue 27: a kubectl apply of an Application syncs, its
// status shows on the resource, and its deletion cascades; a resource
// whose spec does not validate says why and applies nothing.
func TestFrontDoorApplication(t *testing.T) {
	if err := testbed.InstallCRDs(t.Context(), bed.env.Cluster.Config, "deploy/crds/applications.yaml", "deploy/crds/appprojects.yaml"); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(bed.env.Cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	crNS, dest, name := uniq("fd-apps"), uniq("fd-gb"), uniq("fd-guestbook")
	if _, err := bed.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: crNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	repoURL, work := newRepo(t, name)
	sha := push(t, work, map[string]string{
		"guestbook/guestbook-ui-deployment.yaml": fmt.Sprintf(deploymentYAML, "gcr.io/heptio-images/ks-guestbook-demo:0.1"),
		"guestbook/guestbook-ui-svc.yaml":        serviceYAML,
	})
	dev := startDev(t, "WINDLASS_WATCH_APPLICATIONS="+crNS)
	apps := dyn.Resource(frontdoor.Applications).Namespace(crNS)
	projects := dyn.Resource(frontdoor.AppProjects).Namespace(crNS)

	// The project first, as an AppProject too; the Application waits for
	// it (refused until it exists, then applied).
	project := uniq("fd-team")
	if _, err := apps.Create(t.Context(), frontDoorApp(crNS, name, project, repoURL, dest), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := projects.Create(t.Context(), frontDoorProject(crNS, project, repoURL, dest), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	eventually(t, 3*time.Minute, "the resource's status Synced and Healthy at the pushed commit after a sync", func() (bool, string) {
		u, err := apps.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		sync, _, _ := unstructured.NestedString(u.Object, "status", "sync", "status")
		health, _, _ := unstructured.NestedString(u.Object, "status", "health", "status")
		rev, _, _ := unstructured.NestedString(u.Object, "status", "sync", "revision")
		phase, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "phase")
		auto, _, _ := unstructured.NestedBool(u.Object, "status", "operationState", "operation", "initiatedBy", "automated")
		return sync == "Synced" && health == "Healthy" && rev == sha && phase == "Succeeded" && auto,
			fmt.Sprintf("%s/%s at %s, operation %s (automated %v)", sync, health, rev, phase, auto)
	})
	t.Logf("status Synced and Healthy on the resource %s after the AppProject was created", time.Since(created).Round(time.Millisecond))
	if _, ok := deploymentAvailable(t, dest); !ok {
		t.Fatal("the guestbook deployment is not available after the sync")
	}
	var view workflows.AppView
	if code := dev.call(t, http.MethodGet, "/api/v1/applications/"+name+"?project="+project, nil, &view); code != http.StatusOK || view.Spec.Annotations[frontdoor.DeclaredBy] != crNS+"/"+name {
		t.Fatalf("app through the API: status %d, annotations %v", code, view.Spec.Annotations)
	}

	// An operation written on the resource (as `argocd app sync` writes
	// it) runs a sync by its initiator, and is removed.
	op := `{"operation": {"initiatedBy": {"username": "alice"}, "sync": {"prune": true}}}`
	if _, err := apps.Patch(t.Context(), name, types.MergePatchType, []byte(op), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "a sync by alice, Succeeded, and the operation removed", func() (bool, string) {
		u, err := apps.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		by, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "operation", "initiatedBy", "username")
		phase, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "phase")
		_, pending := u.Object["operation"]
		return by == "alice" && phase == "Succeeded" && !pending, fmt.Sprintf("operation by %q %s, still pending %v", by, phase, pending)
	})

	// A spec that does not validate: the status says why, nothing is
	// applied.
	bad := frontDoorApp(crNS, name+"-bad", project, repoURL, dest)
	unstructured.SetNestedField(bad.Object, "yes", "spec", "source", "bogus")
	if _, err := apps.Create(t.Context(), bad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "an InvalidSpecError condition naming the field", func() (bool, string) {
		u, err := apps.Get(t.Context(), name+"-bad", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if msg, _ := m["message"].(string); m["type"] == "InvalidSpecError" && strings.Contains(msg, "spec.source.bogus") {
				return true, ""
			}
		}
		return false, fmt.Sprint(conds)
	})
	if code := dev.call(t, http.MethodGet, "/api/v1/applications/"+name+"-bad?project="+project, nil, nil); code != http.StatusNotFound {
		t.Fatalf("an invalid resource made an app: GET answered %d", code)
	}

	// Deleting the resource (kubectl delete) cascades: the resources go,
	// then the finalizer is released and the resource is gone.
	deleted := time.Now()
	for _, n := range []string{name, name + "-bad"} {
		if err := apps.Delete(t.Context(), n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 2*time.Minute, "the resources gone with the Application", func() (bool, string) {
		var left []string
		for _, n := range []string{name, name + "-bad"} {
			if u, err := apps.Get(t.Context(), n, metav1.GetOptions{}); err == nil {
				left = append(left, fmt.Sprintf("Application %s (finalizers %v)", n, u.GetFinalizers()))
			}
		}
		if _, err := bed.kube.AppsV1().Deployments(dest).Get(t.Context(), "guestbook-ui", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			left = append(left, fmt.Sprint("Deployment guestbook-ui: ", err))
		}
		if _, err := bed.kube.CoreV1().Services(dest).Get(t.Context(), "guestbook-ui", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			left = append(left, fmt.Sprint("Service guestbook-ui: ", err))
		}
		return len(left) == 0, fmt.Sprint(left)
	})
	t.Logf("resources and Application gone %s after the delete", time.Since(deleted).Round(time.Millisecond))
	c, err := temporalx.Dial(t.Context(), temporalx.ClientConfig{HostPort: dev.temporal, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	eventually(t, 30*time.Second, "the app's workflow completed", func() (bool, string) {
		d, err := c.DescribeWorkflowExecution(t.Context(), workflows.AppWorkflowID(project, name), "")
		if err != nil {
			return false, err.Error()
		}
		st := d.GetWorkflowExecutionInfo().GetStatus().String()
		return st == "Completed", st
	})

	// The project goes with its AppProject once no app uses it.
	if err := projects.Delete(t.Context(), project, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the project deleted", func() (bool, string) {
		code := dev.call(t, http.MethodGet, "/api/v1/projects/"+project, nil, nil)
		return code == http.StatusNotFound, fmt.Sprint("GET answered ", code)
	})
	if logs := dev.logs.String(); strings.Contains(logs, "sweep of apps whose resource is gone failed") {
		t.Fatalf("the start-up sweep failed:\n%s", logs)
	}
}
