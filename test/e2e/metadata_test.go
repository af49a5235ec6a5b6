package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// listSelected lists the apps a label selector matches, sorted.
func listSelected(t *testing.T, selector string) []string {
	t.Helper()
	var list api.AppList
	if code := call(t, http.MethodGet, "/api/v1/applications?selector="+url.QueryEscape(selector), nil, &list); code != http.StatusOK {
		t.Fatalf("selector %q: status %d", selector, code)
	}
	var names []string
	for _, it := range list.Items {
		names = append(names, it.Name)
	}
	slices.Sort(names)
	return names
}

// sendGitHubPushOf posts a signed GitHub push of main whose one commit
// modifies files, and returns the IDs of the apps it refreshed.
func sendGitHubPushOf(t *testing.T, repoURL, sha string, files ...string) []string {
	t.Helper()
	code, body := postGitHubPush(t, map[string]any{
		"ref": "refs/heads/main", "after": sha,
		"repository": map[string]any{"html_url": repoURL, "clone_url": repoURL + ".git", "default_branch": "main"},
		"commits":    []map[string]any{{"id": sha, "added": []string{}, "removed": []string{}, "modified": files}},
	}, bed.hookSecret)
	var res struct {
		Refreshed []string `json:"refreshed"`
	}
	if err := json.Unmarshal(body, &res); err != nil || code != http.StatusOK {
		t.Fatalf("webhook: status %d, %v", code, err)
	}
	return res.Refreshed
}

func patchApp(t *testing.T, name string, patch map[string]any) (workflows.AppView, int) {
	t.Helper()
	var view workflows.AppView
	code := call(t, http.MethodPatch, "/api/v1/applications/"+name, patch, &view)
	return view, code
}

// Apps carry labels and are selected by ?selector= and app list -l; a
// refresh annotation refreshes once and is dropped; skip-reconcile pauses
// an app until it is removed; manifest-generate-paths keeps a webhook
// push that changes other files from refreshing an app.
func TestLabelsAndArgoAnnotations(t *testing.T) {
	run := uniq("run")
	repoURL, work := newRepo(t, run)
	sha := push(t, work, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1"))
	names := map[string]string{"a": uniq("lbl-a"), "b": uniq("lbl-b"), "c": uniq("lbl-c")}
	labels := map[string]map[string]string{
		"a": {"run": run, "team": "payments", "tier": "web"},
		"b": {"run": run, "team": "search"},
		"c": {"run": run},
	}
	for _, k := range []string{"a", "b", "c"} {
		body := appBody(names[k], repoURL, "guestbook", names[k])
		body["labels"] = labels[k]
		if k == "c" {
			body["annotations"] = map[string]string{appspec.AnnotationManifestPaths: "."}
		}
		if code := call(t, http.MethodPost, "/api/v1/applications", body, nil); code != http.StatusCreated {
			t.Fatalf("create %s: status %d", names[k], code)
		}
	}

	t.Run("selector", func(t *testing.T) {
		a, b, c := names["a"], names["b"], names["c"]
		for _, tc := range []struct {
			selector string
			want     []string
		}{
			{"run=" + run, []string{a, b, c}},
			{"run=" + run + ",team=payments", []string{a}},
			{"run==" + run + ",team!=payments", []string{b, c}},
			{"run=" + run + ",team in (payments,search)", []string{a, b}},
			{"run=" + run + ",team notin (search)", []string{a, c}},
			{"run=" + run + ",tier", []string{a}},
			{"run=" + run + ",!team", []string{c}},
		} {
			eventually(t, 30*time.Second, "selector "+tc.selector, func() (bool, string) {
				got := listSelected(t, tc.selector)
				return slices.Equal(got, tc.want), fmt.Sprint(got)
			})
		}
		var pr api.Problem
		if code := call(t, http.MethodGet, "/api/v1/applications?selector="+url.QueryEscape("team in (a"), nil, &pr); code != http.StatusBadRequest || pr.Field != "selector" {
			t.Errorf("bad selector: status %d %+v, want 400 naming selector", code, pr)
		}
		cli := windlassCLI(t)
		if _, stderr, code := cli(bed.adminPassword+"\n", "login", "--server", bed.api.URL, "--username", "admin", "--password-stdin"); code != 0 {
			t.Fatalf("login: exit %d: %s", code, stderr)
		}
		out, stderr, code := cli("", "app", "list", "-l", "run="+run+",team in (payments,search)", "--show-labels")
		if code != 0 || !strings.Contains(out, a) || !strings.Contains(out, b) || strings.Contains(out, c) || !strings.Contains(out, "team=payments") {
			t.Errorf("app list -l: exit %d\n%s%s", code, out, stderr)
		}
		if out, _, code := cli("", "app", "get", a); code != 0 || !strings.Contains(out, "team=payments,tier=web") {
			t.Errorf("app get shows no labels: exit %d\n%s", code, out)
		}
	})

	t.Run("bad annotation", func(t *testing.T) {
		body := appBody(uniq("sideways"), repoURL, "guestbook", "x")
		body["annotations"] = map[string]string{appspec.AnnotationRefresh: "sideways"}
		var pr api.Problem
		if code := call(t, http.MethodPost, "/api/v1/applications", body, &pr); code != http.StatusBadRequest ||
			pr.Field != "annotations."+appspec.AnnotationRefresh {
			t.Errorf("refresh: sideways: status %d %+v, want 400 naming the annotation", code, pr)
		}
	})

	t.Run("refresh annotation", func(t *testing.T) {
		a := names["a"]
		eventually(t, time.Minute, "first pass of "+a, func() (bool, string) {
			v := appView(t, a)
			return v.Status.SHA == sha, string(v.Status.Sync)
		})
		before := appView(t, a)
		view, code := patchApp(t, a, map[string]any{"annotations": map[string]any{appspec.AnnotationRefresh: appspec.RefreshHard}})
		if code != http.StatusOK {
			t.Fatalf("patch: status %d", code)
		}
		if _, ok := view.Spec.Annotations[appspec.AnnotationRefresh]; ok {
			t.Errorf("the refresh annotation is kept: %v", view.Spec.Annotations)
		}
		eventually(t, time.Minute, "a pass after the refresh annotation", func() (bool, string) {
			v := appView(t, a)
			return v.Refreshes > before.Refreshes && v.Status.ReconciledAt.After(before.Status.ReconciledAt),
				fmt.Sprintf("refreshes %d, reconciled %s", v.Refreshes, v.Status.ReconciledAt)
		})
		if v := appView(t, a); v.Spec.Annotations[appspec.AnnotationRefresh] != "" {
			t.Errorf("stored spec keeps the annotation: %v", v.Spec.Annotations)
		}
	})

	t.Run("skip-reconcile", func(t *testing.T) {
		b := names["b"]
		if _, code := patchApp(t, b, map[string]any{"annotations": map[string]any{appspec.AnnotationSkipReconcile: "true"}}); code != http.StatusOK {
			t.Fatalf("patch: status %d", code)
		}
		eventually(t, time.Minute, "reconcile skipped", func() (bool, string) {
			v := appView(t, b)
			return v.Status.ReconcileSkipped, fmt.Sprintf("%+v", v.Status.Events)
		})
		paused := appView(t, b)
		var pr api.Problem
		if code := call(t, http.MethodPost, "/api/v1/applications/"+b+"/sync", map[string]any{}, &pr); code != http.StatusConflict ||
			!strings.Contains(pr.Detail, appspec.AnnotationSkipReconcile) {
			t.Errorf("sync while paused: status %d %+v, want 409 naming the annotation", code, pr)
		}
		if code := call(t, http.MethodPost, "/api/v1/applications/"+b+"/refresh", nil, nil); code >= 300 {
			t.Fatalf("refresh: status %d", code)
		}
		eventually(t, 30*time.Second, "the refresh taken", func() (bool, string) {
			v := appView(t, b)
			return v.Refreshes > paused.Refreshes, fmt.Sprint(v.Refreshes)
		})
		if v := appView(t, b); !v.Status.ReconciledAt.Equal(paused.Status.ReconciledAt) {
			t.Errorf("a paused app reconciled at %s (paused at %s)", v.Status.ReconciledAt, paused.Status.ReconciledAt)
		}
		if _, code := patchApp(t, b, map[string]any{"annotations": nil}); code != http.StatusOK {
			t.Fatalf("patch: status %d", code)
		}
		eventually(t, time.Minute, "reconcile resumed", func() (bool, string) {
			v := appView(t, b)
			return !v.Status.ReconcileSkipped && v.Status.ReconciledAt.After(paused.Status.ReconciledAt), fmt.Sprint(v.Status.ReconciledAt)
		})
		if res := syncApp(t, b); res.Phase != workflows.PhaseSucceeded {
			t.Errorf("sync after resuming: %s %s", res.Phase, res.Message)
		}
	})

	t.Run("manifest-generate-paths", func(t *testing.T) {
		c := names["c"]
		eventually(t, time.Minute, "first pass of "+c, func() (bool, string) {
			v := appView(t, c)
			return v.Status.SHA == sha, string(v.Status.Sync)
		})
		id, other := workflows.AppWorkflowID(appspec.DefaultProject, c), workflows.AppWorkflowID(appspec.DefaultProject, names["a"])
		before := appView(t, c).Refreshes
		if got := sendGitHubPushOf(t, repoURL, sha, "docs/README.md"); slices.Contains(got, id) || !slices.Contains(got, other) {
			t.Errorf("a push outside guestbook/ refreshed %v: want %s (no paths) and not %s", got, other, id)
		}
		if got := sendGitHubPushOf(t, repoURL, sha, "guestbook/deployment.yaml"); !slices.Contains(got, id) {
			t.Errorf("a push under guestbook/ refreshed %v, not %s", got, id)
		}
		eventually(t, 30*time.Second, "the refresh of the push under guestbook/", func() (bool, string) {
			got := appView(t, c).Refreshes
			return got > before, fmt.Sprint(got - before)
		})
	})
}
