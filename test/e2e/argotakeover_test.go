package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/internal/manifest"
	"github.com/windlass-cd/windlass/workflows"
)

// An app with windlass.dev/argocd-tracking takes over what Argo CD left in
// the cluster: its first sync recreates nothing, drops the field Git
// dropped, prunes what Argo CD tracked for it and left Git, and leaves
// what Argo CD tracked for another app.
func TestArgoTakeover(t *testing.T) {
	ns, name := uniq("argo-takeover"), uniq("argo-takeover")
	if _, err := bed.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// As Argo CD's client-side apply leaves them.
	argoApplied := func(cm, app string, data map[string]string) *corev1.ConfigMap {
		obj := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: cm, Namespace: ns, Annotations: map[string]string{
				manifest.ArgoTrackingIDAnnotation: app + ":/ConfigMap:" + ns + "/" + cm}},
			Data: data}
		last, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		obj.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = string(last)
		out, err := bed.kube.CoreV1().ConfigMaps(ns).Create(t.Context(), obj, metav1.CreateOptions{FieldManager: "argocd-controller"})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	cfg := argoApplied("cfg", name, map[string]string{"a": "1", "dropped": "2"})
	argoApplied("old", name, map[string]string{"a": "1"})
	theirs := argoApplied("theirs", "other", map[string]string{"a": "1"})

	repoURL, work := newRepo(t, name)
	push(t, work, map[string]string{"app/cfg.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: \"1\"\n"})
	body := appBody(name, repoURL, "app", ns)
	body["annotations"] = map[string]string{manifest.AppAnnotationArgoTracking: "sometimes"}
	var p api.Problem
	if code := call(t, http.MethodPost, "/api/v1/applications", body, &p); code != http.StatusBadRequest ||
		!strings.Contains(p.Detail, `tracking method "sometimes" is not label, annotation or annotation+label`) {
		t.Fatalf("create with a bad tracking method: status %d %+v", code, p)
	}
	body["annotations"] = map[string]string{manifest.AppAnnotationArgoTracking: "annotation"}
	if code := call(t, http.MethodPost, "/api/v1/applications", body, nil); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	var res workflows.SyncResult
	if code := call(t, http.MethodPost, "/api/v1/applications/"+name+"/sync", map[string]any{"prune": true}, &res); code != http.StatusOK || res.Phase != workflows.PhaseSucceeded {
		t.Fatalf("sync: status %d, result %+v", code, res)
	}

	live, err := bed.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "cfg", metav1.GetOptions{})
	if err != nil || live.UID != cfg.UID {
		t.Fatalf("cfg recreated or gone: %v %v", live, err)
	}
	if _, ok := live.Data["dropped"]; ok || live.Annotations["kubectl.kubernetes.io/last-applied-configuration"] != "" {
		t.Fatalf("cfg keeps what Git dropped: %v %v", live.Data, live.Annotations)
	}
	if live.Annotations[manifest.TrackingAnnotation] == "" {
		t.Fatalf("cfg without Windlass's tracking: %v", live.Annotations)
	}
	eventually(t, 30*time.Second, "old pruned", func() (bool, string) {
		_, err := bed.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "old", metav1.GetOptions{})
		return apierrors.IsNotFound(err), "still there"
	})
	if got, err := bed.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "theirs", metav1.GetOptions{}); err != nil || got.UID != theirs.UID {
		t.Fatalf("another app's object touched: %v %v", got, err)
	}
}
