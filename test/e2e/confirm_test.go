package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/workflows"
)

const confirmMapYAML = `apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  annotations:
    argocd.argoproj.io/sync-options: %s
data:
  k: v
`

// Prune=confirm makes a pruning sync wait until confirm-deletion, and
// Delete=confirm makes the app's deletion wait likewise, as Argo CD's
// "confirm deletion" does.
func TestConfirmDeletion(t *testing.T) {
	ns, name := uniq("confirm"), uniq("confirm")
	repoURL, work := newRepo(t, name)
	files := guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1")
	files["guestbook/precious.yaml"] = fmt.Sprintf(confirmMapYAML, "precious", "Prune=confirm")
	files["guestbook/keepsake.yaml"] = fmt.Sprintf(confirmMapYAML, "keepsake", "Delete=confirm")
	push(t, work, files)
	if code := call(t, http.MethodPost, "/api/v1/applications", appBody(name, repoURL, "guestbook", ns), nil); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	syncApp(t, name)
	exists := func(cm string) bool {
		_, err := bed.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), cm, metav1.GetOptions{})
		return !apierrors.IsNotFound(err)
	}

	if code := call(t, http.MethodPost, "/api/v1/applications/"+name+"/confirm-deletion", nil, nil); code != http.StatusConflict {
		t.Fatalf("confirm with nothing waiting: status %d, want 409", code)
	}
	if err := work.Remove("guestbook/precious.yaml"); err != nil {
		t.Fatal(err)
	}
	push(t, work, nil)
	var acc workflows.SyncAccepted
	if code := call(t, http.MethodPost, "/api/v1/applications/"+name+"/sync?wait=false", map[string]any{"prune": true}, &acc); code != http.StatusAccepted {
		t.Fatalf("sync: status %d", code)
	}
	eventually(t, time.Minute, "the sync to wait for approval", func() (bool, string) {
		var op workflows.Operation
		call(t, http.MethodGet, "/api/v1/applications/"+name+"/operation", nil, &op)
		return len(op.AwaitingApproval) == 1 && op.AwaitingApproval[0].Name == "precious", fmt.Sprintf("%+v", op)
	})
	if !exists("precious") {
		t.Fatal("precious was pruned before approval")
	}
	var approved api.ApprovedDeletion
	if code := call(t, http.MethodPost, "/api/v1/applications/"+name+"/confirm-deletion", nil, &approved); code != http.StatusOK || len(approved.Resources) != 1 {
		t.Fatalf("confirm: status %d %+v", code, approved)
	}
	res, ok, err := api.WaitSync(t.Context(), bed.temporal, acc.ID)
	if err != nil || !ok {
		t.Fatalf("sync after approval: %+v %v", res, err)
	}
	eventually(t, 30*time.Second, "precious pruned", func() (bool, string) { return !exists("precious"), "still there" })

	var del workflows.DeleteResult
	if code := call(t, http.MethodDelete, "/api/v1/applications/"+name+"?cascade=background", nil, &del); code != http.StatusAccepted ||
		len(del.AwaitingApproval) != 1 || del.AwaitingApproval[0].Name != "keepsake" {
		t.Fatalf("delete: status %d %+v", code, del)
	}
	if !exists("keepsake") {
		t.Fatal("keepsake deleted before approval")
	}
	if code := call(t, http.MethodPost, "/api/v1/applications/"+name+"/confirm-deletion", nil, &approved); code != http.StatusOK {
		t.Fatalf("confirm delete: status %d", code)
	}
	eventually(t, 30*time.Second, "keepsake deleted and the workflow completed", func() (bool, string) {
		d, err := bed.temporal.DescribeWorkflowExecution(t.Context(), workflows.AppWorkflowID("default", name), "")
		if err != nil {
			return false, err.Error()
		}
		st := d.GetWorkflowExecutionInfo().GetStatus().String()
		return st == "Completed" && !exists("keepsake"), st
	})
}
