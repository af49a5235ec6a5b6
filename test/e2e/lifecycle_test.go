package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/manifest"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/workflows"
)

func guestbookFiles(image string) map[string]string {
	return map[string]string{
		"guestbook/guestbook-ui-deployment.yaml": fmt.Sprintf(deploymentYAML, image),
		"guestbook/guestbook-ui-svc.yaml":        serviceYAML,
	}
}

func appView(t *testing.T, name string) workflows.AppView {
	t.Helper()
	var v workflows.AppView
	call(t, http.MethodGet, "/api/v1/applications/"+name, nil, &v)
	return v
}

func syncApp(t *testing.T, name string) workflows.SyncResult {
	t.Helper()
	var res workflows.SyncResult
	if code := call(t, http.MethodPost, "/api/v1/applications/"+name+"/sync", nil, &res); code != http.StatusOK || res.Phase != workflows.PhaseSucceeded {
		t.Fatalf("sync: status %d, result %+v", code, res)
	}
	return res
}

func image(t *testing.T, ns string) string {
	d, _ := deploymentAvailable(t, ns)
	if d == nil {
		return ""
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

// createAutomatedGuestbook creates app name of the guestbook in ns with
// the automated policy automated, waits until it is Synced and Healthy,
// and returns how many syncs its history holds then.
func createAutomatedGuestbook(t *testing.T, ns, name string, automated map[string]any) int {
	t.Helper()
	repoURL, work := newRepo(t, name)
	push(t, work, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1"))
	body := appBody(name, repoURL, "guestbook", ns)
	body["syncPolicy"].(map[string]any)["automated"] = automated
	if code := call(t, http.MethodPost, "/api/v1/applications", body, nil); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	eventually(t, 60*time.Second, "auto-synced and healthy", func() (bool, string) {
		v := appView(t, name)
		return v.Status.Sync == appspec.SyncSynced && v.Status.Health == appspec.HealthHealthy, string(v.Status.Sync) + "/" + string(v.Status.Health)
	})
	return len(appView(t, name).History)
}

// A `kubectl scale` of a self-healing app is noticed by the cluster watch
// and healed without any refresh call.
func TestDriftHealedByWatch(t *testing.T) {
	ns, name := uniq("drift"), uniq("heal")
	before := createAutomatedGuestbook(t, ns, name, map[string]any{"selfHeal": true})
	// What `kubectl scale --replicas=3` does: an update of the scale
	// subresource by another field manager.
	_, err := bed.kube.AppsV1().Deployments(ns).UpdateScale(t.Context(), "guestbook-ui",
		&autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "guestbook-ui", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}},
		metav1.UpdateOptions{FieldManager: "kubectl"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "drift healed back to 1 replica", func() (bool, string) {
		d, err := bed.kube.AppsV1().Deployments(ns).Get(t.Context(), "guestbook-ui", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		v := appView(t, name)
		return *d.Spec.Replicas == 1 && len(v.History) > before, fmt.Sprintf("replicas %d, syncs %d", *d.Spec.Replicas, len(v.History))
	})
	h := appView(t, name).History[0]
	if h.Initiator != workflows.InitiatorAutomated || h.Phase != workflows.PhaseSucceeded {
		t.Fatalf("healing sync = %+v, want an automated success", h)
	}
}

// An object that another writer creates with a self-healing, pruning
// app's tracking (a kind the app has) is noticed by the cluster watch,
// shown by a listing refresh as one to prune, and pruned by an automated
// sync, long before the refresh timer (600 s here) would list again.
func TestStrayObjectPrunedByWatch(t *testing.T) {
	ns, name := uniq("stray"), uniq("prune")
	before := createAutomatedGuestbook(t, ns, name, map[string]any{"selfHeal": true, "prune": true})
	stray := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "stray", "namespace": ns}}}
	manifest.SetTracking("default", name, stray)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "stray", Namespace: ns, Labels: stray.GetLabels(), Annotations: stray.GetAnnotations()},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}
	if _, err := bed.kube.CoreV1().Services(ns).Create(t.Context(), svc, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the stray Service pruned by an automated sync", func() (bool, string) {
		_, err := bed.kube.CoreV1().Services(ns).Get(t.Context(), "stray", metav1.GetOptions{})
		v := appView(t, name)
		return apierrors.IsNotFound(err) && len(v.History) > before, fmt.Sprintf("get: %v, syncs %d", err, len(v.History))
	})
	h := appView(t, name).History[0]
	if h.Initiator != workflows.InitiatorAutomated || h.Phase != workflows.PhaseSucceeded {
		t.Fatalf("pruning sync = %+v, want an automated success", h)
	}
}

// A rollback to the sync before last brings the old image back; the app
// is then OutOfSync with its branch, as in Argo CD.
func TestRollbackRestoresOldImage(t *testing.T) {
	ns, name := uniq("rb"), uniq("rollback")
	repoURL, work := newRepo(t, name)
	push(t, work, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1"))
	if code := call(t, http.MethodPost, "/api/v1/applications", appBody(name, repoURL, "guestbook", ns), nil); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	first := syncApp(t, name)
	push(t, work, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.2"))
	call(t, http.MethodPost, "/api/v1/applications/"+name+"/refresh", nil, nil)
	second := syncApp(t, name)
	if second.SHA == first.SHA {
		t.Fatalf("second sync did not see the new commit: %s", second.SHA)
	}
	eventually(t, 30*time.Second, "image 0.2 live", func() (bool, string) { i := image(t, ns); return strings.HasSuffix(i, ":0.2"), i })

	var rb workflows.SyncResult
	if code := call(t, http.MethodPost, "/api/v1/applications/"+name+"/rollback", map[string]any{"id": first.ID}, &rb); code != http.StatusOK {
		t.Fatalf("rollback: status %d, result %+v", code, rb)
	}
	if rb.SHA != first.SHA || rb.Phase != workflows.PhaseSucceeded {
		t.Fatalf("rollback result %+v, want a success at %s", rb, first.SHA)
	}
	eventually(t, 30*time.Second, "image 0.1 live again", func() (bool, string) { i := image(t, ns); return strings.HasSuffix(i, ":0.1"), i })
	eventually(t, 30*time.Second, "OutOfSync with the branch", func() (bool, string) {
		v := appView(t, name)
		return v.Status.Sync == appspec.SyncOutOfSync && len(v.History) == 3, fmt.Sprintf("%s, %d syncs", v.Status.Sync, len(v.History))
	})
	var hist workflows.HistoryView
	call(t, http.MethodGet, "/api/v1/applications/"+name+"/history", nil, &hist)
	if len(hist.Recent) != 3 || hist.Recent[0].ID != rb.ID {
		t.Fatalf("history = %+v", hist.Recent)
	}
	// The full history comes from visibility: every SyncWorkflow of the app.
	eventually(t, 30*time.Second, "three syncs in visibility", func() (bool, string) {
		var all struct {
			Items []struct{ ID, Status string } `json:"items"`
		}
		call(t, http.MethodGet, "/api/v1/applications/"+name+"/syncs", nil, &all)
		return len(all.Items) == 3, fmt.Sprintf("%+v", all.Items)
	})
	// An unknown sync ID is refused with the reason.
	var p map[string]any
	if code := call(t, http.MethodPost, "/api/v1/applications/"+name+"/rollback", map[string]any{"id": "sync/default/x/1"}, &p); code != http.StatusConflict {
		t.Fatalf("rollback to an unknown sync: status %d %+v, want 409", code, p)
	}
}

// Deleting an app with the foreground cascade removes every resource and
// ends its workflow.
func TestDeleteForegroundCascade(t *testing.T) {
	ns, name := uniq("del"), uniq("delete")
	repoURL, work := newRepo(t, name)
	push(t, work, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1"))
	if code := call(t, http.MethodPost, "/api/v1/applications", appBody(name, repoURL, "guestbook", ns), nil); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	syncApp(t, name)
	var res workflows.DeleteResult
	if code := call(t, http.MethodDelete, "/api/v1/applications/"+name+"?cascade=foreground", nil, &res); code != http.StatusOK {
		t.Fatalf("delete: status %d %+v", code, res)
	}
	if len(res.Resources) != 2 {
		t.Fatalf("deleted %+v, want the Service and the Deployment", res.Resources)
	}
	if _, err := bed.kube.AppsV1().Deployments(ns).Get(t.Context(), "guestbook-ui", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("deployment still there after a foreground delete: %v", err)
	}
	if _, err := bed.kube.CoreV1().Services(ns).Get(t.Context(), "guestbook-ui", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("service still there after a foreground delete: %v", err)
	}
	eventually(t, 30*time.Second, "app workflow completed", func() (bool, string) {
		d, err := bed.temporal.DescribeWorkflowExecution(t.Context(), workflows.AppWorkflowID("default", name), "")
		if err != nil {
			return false, err.Error()
		}
		st := d.GetWorkflowExecutionInfo().GetStatus().String()
		return st == "Completed", st
	})
}

// A repository credential (a Git password, a chart repository's template
// password and client key, a GitHub App's private key and its
// installation tokens) and a notification service's credential (a
// webhook's bearer token and basic password, the Slack token, the SMTP
// password, the GitHub token, the Teams URL) never show up in any workflow
// history of the namespace, in the archive, nor in the logs.
func TestSecretsNeverInHistoryOrLogs(t *testing.T) {
	ns, name := uniq("sec"), uniq("secret")
	work, body := privateGuestbook(t, ns, name)
	body["syncPolicy"].(map[string]any)["automated"] = map[string]any{"prune": true}
	if code := call(t, http.MethodPost, "/api/v1/applications", body, nil); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	eventually(t, 60*time.Second, "private repo synced", func() (bool, string) {
		v := appView(t, name)
		return v.Status.Sync == appspec.SyncSynced && v.Status.Health == appspec.HealthHealthy, string(v.Status.Sync) + ": " + v.Status.Message
	})
	push(t, work, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.2"))
	call(t, http.MethodPost, "/api/v1/applications/"+name+"/refresh?hard=true", nil, nil)
	eventually(t, 60*time.Second, "new commit synced", func() (bool, string) {
		i := image(t, ns)
		return strings.HasSuffix(i, ":0.2"), i
	})

	outside := createSymlinkChainApp(t)
	chartSecrets := createPrivateChartApp(t)
	appKey, appTokens := createGitHubAppApp(t)
	ntf := setupNotifications(t)
	ntfApp, ntfProj := ntf.failingSubscribedApp(t)
	// Deleted, its app workflow closes: closed runs go to the archive.
	if code := call(t, http.MethodDelete, "/api/v1/applications/"+ntfApp+"?project="+ntfProj, nil, nil); code != http.StatusOK {
		t.Fatalf("delete %s: status %d", ntfApp, code)
	}

	// Every history in the namespace, open and closed.
	secret := []byte(bed.secret)
	what := []string{"the repository secret", "the file outside the checkout", "the chart repository password", "the chart repository client key",
		"the webhook bearer token", "the webhook basic password", "the Slack token", "the SMTP password", "the GitHub token", "the Teams URL"}
	needles := append(append([][]byte{secret, outside}, chartSecrets...), ntf.needles()...)
	needles, what = append(needles, appKey), append(what, "the GitHub App private key")
	for _, tok := range appTokens() {
		needles, what = append(needles, []byte(tok)), append(what, "a GitHub App installation token")
	}
	scanned := scanHistories(t, bed.temporal, needles, func(i int, where string) {
		t.Fatalf("%s is in the history of %s", what[i], where)
	})
	if scanned < 50 {
		t.Fatalf("scanned only %d history events: the scan is not looking at the e2e runs", scanned)
	}
	// And the archive, where closed runs go (TestArchivedSyncsListAndRollBack
	// shows the scan reads it).
	scanArchive(t, needles, func(i int, where string) {
		t.Fatalf("%s is in the archive file %s", what[i], where)
	})
	logs, err := os.ReadFile(bed.logs.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(logs, []byte(name)) {
		t.Fatal("the log file does not mention the app: the log scan is not looking at the right file")
	}
	if bytes.Contains(logs, secret) {
		t.Fatal("the repository secret is in the logs")
	}
	if bytes.Contains(logs, outside) {
		t.Fatal("the file outside the checkout is in the logs")
	}
	if !bytes.Contains(logs, []byte("notification sent")) {
		t.Fatal("the log file has no delivery: the log scan is not looking at the right file")
	}
	for i, s := range needles[2:] {
		if bytes.Contains(logs, s) {
			t.Fatalf("%s is in the logs", what[2+i])
		}
	}
}

// privateGuestbook pushes the guestbook at image 0.1 to a new repository
// of the authenticated Git server, and returns its clone and the body of
// app name deploying it to ns.
func privateGuestbook(t *testing.T, ns, name string) (*testbed.WorkRepo, map[string]any) {
	t.Helper()
	url, err := bed.authGit.CreateRepo(name)
	if err != nil {
		t.Fatal(err)
	}
	work := newAuthRepo(t, url)
	push(t, work, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1"))
	return work, appBody(name, url, "guestbook", ns)
}

// createSymlinkChainApp creates an app whose YAML is a chain of symlinks
// that all stay inside the repository as text, yet resolve through "/"
// to a Secret on the worker's disk. The app must show an error naming the
// file, and the Secret must not reach the cluster. It returns the
// outside file's secret content.
func createSymlinkChainApp(t *testing.T) []byte {
	t.Helper()
	ns, name := uniq("sec"), uniq("chain")
	content := "outside-" + name
	outside := filepath.Join(t.TempDir(), "secret.yaml")
	if err := os.WriteFile(outside, []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: stolen}\nstringData: {token: "+content+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	url, work := newRepo(t, name)
	// d/a/up is "..", d/L "a/up/.." (the checkout) and each d/Mi
	// "M(i-1)/..", one level higher: d/M30 is "/" from any checkout less than 30 deep.
	links := map[string]string{"d/a/up": "..", "d/L": "a/up/..", "d/M1": "L/.."}
	for i := 2; i <= 30; i++ {
		links[fmt.Sprintf("d/M%d", i)] = fmt.Sprintf("M%d/..", i-1)
	}
	links["app/secret.yaml"] = "../d/M30" + outside
	for link, target := range links {
		if err := work.Symlink(link, target); err != nil {
			t.Fatal(err)
		}
	}
	push(t, work, map[string]string{"app/svc.yaml": serviceYAML})
	if code := call(t, http.MethodPost, "/api/v1/applications", appBody(name, url, "app", ns), nil); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	eventually(t, 60*time.Second, "the app names the symlink", func() (bool, string) {
		v := appView(t, name)
		return strings.Contains(v.Status.Message, "app/secret.yaml"), v.Status.Message
	})
	if v := appView(t, name); strings.Contains(v.Status.Message, content) {
		t.Fatalf("the app's message shows the outside file: %s", v.Status.Message)
	}
	var res workflows.SyncResult
	if code := call(t, http.MethodPost, "/api/v1/applications/"+name+"/sync", nil, &res); code == http.StatusOK && res.Phase == workflows.PhaseSucceeded {
		t.Fatal("a sync of the app succeeded")
	}
	if _, err := bed.kube.CoreV1().Secrets(ns).Get(t.Context(), "stolen", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the outside Secret is in the cluster (or: %v)", err)
	}
	return []byte(content)
}
