package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/internal/actions"
	"github.com/windlass-cd/windlass/workflows"
)

// Resource actions restart and scale an app's Deployment through the API,
// under their own field manager, and land in the app's events; an unknown
// action, a resource the app does not manage and a caller without the
// action's permission are refused.
func TestResourceActions(t *testing.T) {
	ns, name := uniq("act"), uniq("act")
	repoURL, work := newRepo(t, name)
	push(t, work, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1"))
	if code := call(t, http.MethodPost, "/api/v1/applications", appBody(name, repoURL, "guestbook", ns), nil); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	eventually(t, time.Minute, "the first comparison", func() (bool, string) {
		v := appView(t, name)
		return v.Status.SHA != "", string(v.Status.Sync)
	})
	syncApp(t, name)
	path := func(group, kind, res string) string {
		return fmt.Sprintf("/api/v1/applications/%s/resource/actions?group=%s&kind=%s&namespace=%s&name=%s", name, group, kind, ns, res)
	}
	deploy := path("apps", "Deployment", "guestbook-ui")

	var list api.ActionsView
	if code := call(t, http.MethodGet, deploy, nil, &list); code != http.StatusOK {
		t.Fatalf("list: status %d", code)
	}
	if !slices.ContainsFunc(list.Actions, func(a actions.Action) bool { return a.Name == "restart" }) ||
		!slices.ContainsFunc(list.Actions, func(a actions.Action) bool { return a.Name == "scale" }) {
		t.Fatalf("actions %+v: want restart and scale", list.Actions)
	}

	var ran api.RunActionView
	if code := call(t, http.MethodPost, deploy, api.RunActionRequest{Action: "restart"}, &ran); code != http.StatusOK || len(ran.Changes) != 1 {
		t.Fatalf("restart: status %d, %+v", code, ran)
	}
	d, err := bed.kube.AppsV1().Deployments(ns).Get(t.Context(), "guestbook-ui", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] == "" {
		t.Error("restart set no restartedAt annotation")
	}
	if !slices.ContainsFunc(d.ManagedFields, func(f metav1.ManagedFieldsEntry) bool { return f.Manager == cluster.ActionFieldManager }) {
		t.Errorf("no field manager %s after the restart", cluster.ActionFieldManager)
	}
	if code := call(t, http.MethodPost, deploy, api.RunActionRequest{Action: "scale", Params: map[string]string{"replicas": "2"}}, nil); code != http.StatusOK {
		t.Fatalf("scale: status %d", code)
	}
	if d, err = bed.kube.AppsV1().Deployments(ns).Get(t.Context(), "guestbook-ui", metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 2 {
		t.Fatalf("replicas after scale: %v, %v", d.Spec.Replicas, err)
	}

	for _, tc := range []struct {
		what, path string
		body       api.RunActionRequest
		token      string
		want       int
	}{
		{"unknown action", deploy, api.RunActionRequest{Action: "explode"}, bed.token, http.StatusNotFound},
		{"bad parameter", deploy, api.RunActionRequest{Action: "scale", Params: map[string]string{"replicas": "lots"}}, bed.token, http.StatusUnprocessableEntity},
		{"not the app's", path("", "ConfigMap", "kube-root-ca.crt"), api.RunActionRequest{Action: "restart"}, bed.token, http.StatusNotFound},
		{"no permission", deploy, api.RunActionRequest{Action: "restart"}, bed.viewerToken, http.StatusForbidden},
	} {
		if code := callAs(t, tc.token, http.MethodPost, tc.path, tc.body, nil); code != tc.want {
			t.Errorf("%s: status %d, want %d", tc.what, code, tc.want)
		}
	}

	// The same through the CLI.
	cli := windlassCLI(t)
	cliLogin(t, cli)
	res := []string{"--group", "apps", "--kind", "Deployment", "--resource-name", "guestbook-ui", "--namespace", ns}
	runCLISteps(t, cli, []cliStep{
		{append([]string{"app", "actions", "list", name}, res...), 0, "scale    builtin"},
		{append([]string{"app", "actions", "run", name, "scale", "--param", "replicas=1"}, res...), 0, "ran scale on apps/Deployment"},
		{append([]string{"app", "actions", "run", name, "explode"}, res...), 4, ""},
	})

	eventually(t, 30*time.Second, "the actions in the app's events", func() (bool, string) {
		var msgs []string
		for _, e := range appView(t, name).Status.Events {
			if e.Reason == workflows.ReasonActionRan {
				msgs = append(msgs, e.Message)
			}
		}
		joined := strings.Join(msgs, "; ")
		return strings.Contains(joined, "ran action restart on apps/Deployment") && strings.Contains(joined, "ran action scale"), joined
	})
}
