package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/manifest"
	"github.com/windlass-cd/windlass/workflows"
)

func appBody(name, repoURL, path, ns string) map[string]any {
	return map[string]any{
		"name": name, "project": "default",
		"source":      map[string]any{"repoURL": repoURL, "path": path, "targetRevision": "main"},
		"destination": map[string]any{"server": appspec.InClusterServer, "namespace": ns},
		"syncPolicy":  map[string]any{"syncOptions": []string{"CreateNamespace=true"}},
	}
}

func deploymentAvailable(t *testing.T, ns string) (*appsv1.Deployment, bool) {
	d, err := bed.kube.AppsV1().Deployments(ns).Get(t.Context(), "guestbook-ui", metav1.GetOptions{})
	if err != nil {
		return nil, false
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue && d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == 1 {
			return d, true
		}
	}
	return d, false
}

// The walking skeleton: create, sync, live and healthy; push a new image,
// sync again, the new image is live.
func TestGuestbookCreateSyncUpdate(t *testing.T) {
	ns, name := uniq("gb"), uniq("guestbook")
	repoURL, work := newRepo(t, name)
	sha1 := push(t, work, map[string]string{
		"guestbook/guestbook-ui-deployment.yaml": fmt.Sprintf(deploymentYAML, "gcr.io/heptio-images/ks-guestbook-demo:0.1"),
		"guestbook/guestbook-ui-svc.yaml":        serviceYAML,
		"README.md":                              "not a manifest",
	})

	var view workflows.AppView
	if code := call(t, http.MethodPost, "/api/v1/applications", appBody(name, repoURL, "guestbook", ns), &view); code != http.StatusCreated {
		t.Fatalf("create: status %d, body %+v", code, view)
	}
	if code := call(t, http.MethodPost, "/api/v1/applications", appBody(name, repoURL, "guestbook", ns), nil); code != http.StatusConflict {
		t.Fatalf("second create: status %d, want 409", code)
	}

	var res workflows.SyncResult
	if code := call(t, http.MethodPost, "/api/v1/applications/"+name+"/sync", nil, &res); code != http.StatusOK {
		t.Fatalf("sync: status %d, result %+v", code, res)
	}
	if res.Phase != workflows.PhaseSucceeded || res.SHA != sha1 {
		t.Fatalf("sync result = %+v, want Succeeded at %s", res, sha1)
	}
	if len(res.Resources) != 2 || res.Resources[0].Kind != "Service" || res.Resources[1].Kind != "Deployment" {
		t.Fatalf("sync resources = %+v, want Service then Deployment", res.Resources)
	}

	d, ok := deploymentAvailable(t, ns)
	if !ok {
		t.Fatalf("deployment not available after a successful sync: %+v", d)
	}
	if got, want := d.Annotations[manifest.TrackingAnnotation], "default/"+name+":apps/Deployment:"+ns+"/guestbook-ui"; got != want {
		t.Fatalf("tracking annotation = %q, want %q", got, want)
	}
	eventually(t, 30*time.Second, "app Synced and Healthy", func() (bool, string) {
		var v workflows.AppView
		call(t, http.MethodGet, "/api/v1/applications/"+name, nil, &v)
		return v.Status.Sync == appspec.SyncSynced && v.Status.Health == appspec.HealthHealthy && v.Status.SHA == sha1,
			fmt.Sprintf("%s/%s at %s: %s", v.Status.Sync, v.Status.Health, v.Status.SHA, v.Status.Message)
	})

	// Drift is seen: the app goes OutOfSync after the image changes in Git.
	sha2 := push(t, work, map[string]string{
		"guestbook/guestbook-ui-deployment.yaml": fmt.Sprintf(deploymentYAML, "gcr.io/heptio-images/ks-guestbook-demo:0.2"),
	})
	if code := call(t, http.MethodPost, "/api/v1/applications/"+name+"/refresh", nil, nil); code != http.StatusAccepted {
		t.Fatalf("refresh: status %d", code)
	}
	eventually(t, 30*time.Second, "app OutOfSync at the new SHA", func() (bool, string) {
		var v workflows.AppView
		call(t, http.MethodGet, "/api/v1/applications/"+name, nil, &v)
		return v.Status.Sync == appspec.SyncOutOfSync && v.Status.SHA == sha2, fmt.Sprintf("%s at %s", v.Status.Sync, v.Status.SHA)
	})

	res = workflows.SyncResult{}
	if code := call(t, http.MethodPost, "/api/v1/applications/"+name+"/sync", nil, &res); code != http.StatusOK || res.Phase != workflows.PhaseSucceeded || res.SHA != sha2 {
		t.Fatalf("second sync: status %d, result %+v", code, res)
	}
	eventually(t, 30*time.Second, "new image live and available", func() (bool, string) {
		d, ok := deploymentAvailable(t, ns)
		if d == nil {
			return false, "no deployment"
		}
		img := d.Spec.Template.Spec.Containers[0].Image
		return ok && strings.HasSuffix(img, ":0.2"), img
	})
	eventually(t, 30*time.Second, "app Synced and Healthy at the new SHA", func() (bool, string) {
		var v workflows.AppView
		call(t, http.MethodGet, "/api/v1/applications/"+name, nil, &v)
		return v.Status.Sync == appspec.SyncSynced && v.Status.Health == appspec.HealthHealthy && v.Status.SHA == sha2,
			fmt.Sprintf("%s/%s at %s", v.Status.Sync, v.Status.Health, v.Status.SHA)
	})
	if len(view.History) != 0 {
		t.Fatalf("a new app has history %+v", view.History)
	}
	var final workflows.AppView
	call(t, http.MethodGet, "/api/v1/applications/"+name, nil, &final)
	if len(final.History) != 2 || final.History[0].SHA != sha2 || final.History[1].SHA != sha1 || final.History[0].Initiator != "admin" {
		t.Fatalf("history = %+v, want the two syncs, newest first", final.History)
	}

	// The list comes from the visibility index.
	eventually(t, 30*time.Second, "app listed with its status", func() (bool, string) {
		var list api.AppList
		call(t, http.MethodGet, "/api/v1/applications?limit=1000", nil, &list)
		for _, a := range list.Items {
			if a.Name == name {
				return a.Sync == "Synced" && a.Health == "Healthy" && a.Revision == sha2, fmt.Sprintf("%+v", a)
			}
		}
		return false, fmt.Sprintf("%d apps, %s not among them", len(list.Items), name)
	})
}

// Bad input gets a clear error and the app stays usable.
func TestBadInput(t *testing.T) {
	repoURL, work := newRepo(t, uniq("bad"))
	push(t, work, map[string]string{
		"broken/cm.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a\n",
		"good/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: good}\n",
		"chart/Chart.yaml":        "apiVersion: v2\nname: c\nversion: 0.1.0\n",
		"chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.missing.name }}\n",
	})
	t.Run("request errors", func(t *testing.T) {
		tests := []struct {
			name, method, path string
			body               any
			status             int
			field              string
		}{
			{"path traversal", http.MethodPost, "/api/v1/applications", appBody("trav", repoURL, "../../etc", "x"), 400, "source.path"},
			{"bad name", http.MethodPost, "/api/v1/applications", appBody("Bad_Name", repoURL, "good", "x"), 400, "name"},
			{"malformed json", http.MethodPost, "/api/v1/applications", `{"name": `, 400, ""},
			{"unknown app", http.MethodGet, "/api/v1/applications/does-not-exist", nil, 404, ""},
			{"sync unknown app", http.MethodPost, "/api/v1/applications/does-not-exist/sync", nil, 404, ""},
			{"bad limit", http.MethodGet, "/api/v1/applications?limit=-1", nil, 400, "limit"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				var p api.Problem
				if code := call(t, tt.method, tt.path, tt.body, &p); code != tt.status {
					t.Fatalf("status = %d, want %d (%+v)", code, tt.status, p)
				}
				if p.Status != tt.status || p.Title == "" || p.Field != tt.field {
					t.Fatalf("problem = %+v, want status %d field %q", p, tt.status, tt.field)
				}
			})
		}
	})
	t.Run("source errors", func(t *testing.T) {
		tests := []struct {
			name, repo, path, rev, want string
		}{
			{"malformed yaml", repoURL, "broken", "main", "invalid manifest"},
			{"missing path", repoURL, "nowhere", "main", "path not found"},
			{"chart that fails to template", repoURL, "chart", "main", "c/templates/cm.yaml:4"},
			{"missing revision", repoURL, "good", "no-such-branch", "revision not found"},
			{"missing repository", bed.git.URL("no-such-repo"), "good", "main", "repository not found"},
			{"unreachable git server", "http://127.0.0.1:1/repo.git", "good", "main", "connection refused"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				name := uniq("bad")
				body := appBody(name, tt.repo, tt.path, uniq("ns"))
				body["source"].(map[string]any)["targetRevision"] = tt.rev
				if code := call(t, http.MethodPost, "/api/v1/applications", body, nil); code != http.StatusCreated {
					t.Fatalf("create: status %d", code)
				}
				eventually(t, 60*time.Second, "status Unknown with the reason", func() (bool, string) {
					var v workflows.AppView
					call(t, http.MethodGet, "/api/v1/applications/"+name, nil, &v)
					return v.Status.Sync == appspec.SyncUnknown && strings.Contains(v.Status.Message, tt.want), v.Status.Message
				})
				// A bad revision refuses the sync (422); a bad path lets it
				// start and fail (409 with the result). Either way the
				// reason is given.
				var res map[string]any
				code := call(t, http.MethodPost, "/api/v1/applications/"+name+"/sync", nil, &res)
				msg := fmt.Sprint(res["message"], res["detail"])
				if (code != http.StatusConflict && code != http.StatusUnprocessableEntity) || !strings.Contains(msg, tt.want) {
					t.Fatalf("sync: status %d, body %+v, want a refusal or failure mentioning %q", code, res, tt.want)
				}
			})
		}
	})
}
