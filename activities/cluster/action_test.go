package cluster

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	resactions "github.com/windlass-cd/windlass/internal/actions"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// create makes an object in the test namespace from a map.
func (h *harness) create(obj map[string]any) *unstructured.Unstructured {
	h.t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(h.ns)
	gvr := gvrDeployments
	if u.GetKind() == "CronJob" {
		gvr = gvrCronJobs
	}
	out, err := h.dyn.Resource(gvr).Namespace(h.ns).Create(h.t.Context(), u, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

var gvrCronJobs = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "cronjobs"}

func actionDeployment(name string) map[string]any {
	labels := map[string]any{"app": name}
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"replicas": int64(1), "selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox"}}}},
		},
	}
}

func fieldManagers(o *unstructured.Unstructured) []string {
	var out []string
	for _, f := range o.GetManagedFields() {
		out = append(out, f.Manager)
	}
	return out
}

func TestRunActionBuiltins(t *testing.T) {
	h := newHarness(t)
	h.create(actionDeployment("web"))
	tg := h.target("actions")
	deploy := appspec.ResourceKey{Group: "apps", Kind: "Deployment", Namespace: h.ns, Name: "web"}

	list, err := h.a.ListActions(t.Context(), ActionInput{Target: tg, Resource: deploy})
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(list, func(a resactions.Action) bool { return a.Name == "scale" }); i < 0 || list[i].Params[0].Default != "1" {
		t.Fatalf("actions = %+v, want scale with a default of 1", list)
	}

	out := must[RunActionOutput](h, RunActionName, RunActionInput{ActionInput: ActionInput{Target: tg, Resource: deploy}, Action: "restart"})
	if diff := cmp.Diff([]ActionChange{{Operation: "patch", Resource: deploy}}, out.Changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	got := h.get(gvrDeployments, "web")
	if at, _, _ := unstructured.NestedString(got.Object, "spec", "template", "metadata", "annotations", "kubectl.kubernetes.io/restartedAt"); at == "" {
		t.Error("restart set no restartedAt annotation")
	}
	if !slices.Contains(fieldManagers(got), ActionFieldManager) {
		t.Errorf("managers = %v, want %s among them", fieldManagers(got), ActionFieldManager)
	}

	must[RunActionOutput](h, RunActionName, RunActionInput{ActionInput: ActionInput{Target: tg, Resource: deploy}, Action: "scale", Params: map[string]string{"replicas": "3"}})
	if n, _, _ := unstructured.NestedInt64(h.get(gvrDeployments, "web").Object, "spec", "replicas"); n != 3 {
		t.Errorf("replicas = %d after scale, want 3", n)
	}

	cron := h.create(map[string]any{
		"apiVersion": "batch/v1", "kind": "CronJob", "metadata": map[string]any{"name": "nightly"},
		"spec": map[string]any{"schedule": "0 0 * * *", "jobTemplate": map[string]any{"spec": map[string]any{"template": map[string]any{
			"spec": map[string]any{"restartPolicy": "Never", "containers": []any{map[string]any{"name": "c", "image": "busybox"}}}}}}},
	})
	cronKey := appspec.ResourceKey{Group: "batch", Kind: "CronJob", Namespace: h.ns, Name: "nightly"}
	out = must[RunActionOutput](h, RunActionName, RunActionInput{ActionInput: ActionInput{Target: tg, Resource: cronKey}, Action: "create-job"})
	if len(out.Changes) != 1 || out.Changes[0].Operation != "create" {
		t.Fatalf("changes = %+v, want one create", out.Changes)
	}
	job := h.get(gvrJobs, out.Changes[0].Resource.Name)
	if job == nil || job.GetOwnerReferences()[0].UID != cron.GetUID() {
		t.Fatalf("job %s missing or not owned by the CronJob", out.Changes[0].Resource.Name)
	}
}

// luaActions is a catalog of the Lua scripts of files (path → source).
func luaActions(t *testing.T, files map[string]string) *resactions.Catalog {
	t.Helper()
	dir := t.TempDir()
	for p, src := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := resactions.New(resactions.Options{CustomizationsDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// A v1 Lua action patches what it changed; a v2 one also creates an
// object, even one copied from the live object with its server-set fields.
func TestRunActionLua(t *testing.T) {
	cat := luaActions(t, map[string]string{
		"apps/Deployment/actions/discovery.lua": `return {label = {params = {{name = "tier"}}}, clone = {}}`,
		"apps/Deployment/actions/label/action.lua": `
obj.metadata.labels = obj.metadata.labels or {}
obj.metadata.labels.tier = actionParams.tier
return obj`,
		"apps/Deployment/actions/clone/action.lua": `
local copy = {apiVersion = obj.apiVersion, kind = obj.kind, metadata = obj.metadata, spec = obj.spec}
copy.metadata.name = obj.metadata.name .. "-clone"
return {{operation = "create", resource = copy}}`,
	})
	h := newHarness(t, WithActions(cat))
	h.create(actionDeployment("web"))
	in := RunActionInput{ActionInput: ActionInput{Target: h.target("actions"), Resource: appspec.ResourceKey{Group: "apps", Kind: "Deployment", Namespace: h.ns, Name: "web"}}}
	in.Action, in.Params = "label", map[string]string{"tier": "gold"}
	must[RunActionOutput](h, RunActionName, in)
	if got := h.get(gvrDeployments, "web").GetLabels()["tier"]; got != "gold" {
		t.Errorf("label tier = %q, want gold", got)
	}
	in.Action, in.Params = "clone", nil
	out := must[RunActionOutput](h, RunActionName, in)
	if len(out.Changes) != 1 || out.Changes[0].Operation != "create" || h.get(gvrDeployments, "web-clone") == nil {
		t.Fatalf("changes %+v: want web-clone created", out.Changes)
	}
}

func TestRunActionBadInput(t *testing.T) {
	cat := luaActions(t, map[string]string{
		"apps/Deployment/actions/discovery.lua":            `return {spin = {}, ["not-an-object"] = {}, rename = {}}`,
		"apps/Deployment/actions/spin/action.lua":          `obj.spec.replicas = 9 while true do end return obj`,
		"apps/Deployment/actions/not-an-object/action.lua": `return 42`,
		"apps/Deployment/actions/rename/action.lua":        `obj.metadata.name = "other" return obj`,
	})
	h := newHarness(t, WithActions(cat))
	before := h.create(actionDeployment("web"))
	tg := h.target("actions")
	deploy := appspec.ResourceKey{Group: "apps", Kind: "Deployment", Namespace: h.ns, Name: "web"}
	for _, tc := range []struct {
		action, resource, want string
	}{
		{"spin", "web", "InvalidAction"},
		{"not-an-object", "web", "InvalidAction"},
		{"rename", "web", "InvalidAction"},
		{"explode", "web", "UnknownAction"},
		{"restart", "gone", "ResourceNotFound"},
	} {
		t.Run(tc.action, func(t *testing.T) {
			k := deploy
			k.Name = tc.resource
			_, err := run[RunActionOutput](h, RunActionName, RunActionInput{ActionInput: ActionInput{Target: tg, Resource: k}, Action: tc.action})
			typ, permanent := errorType(err)
			if typ != tc.want || !permanent {
				t.Fatalf("err = %v (type %q, non-retryable %v), want non-retryable %s", err, typ, permanent, tc.want)
			}
		})
	}
	after := h.get(gvrDeployments, "web")
	if diff := cmp.Diff(before.Object["spec"], after.Object["spec"]); diff != "" || slices.Contains(fieldManagers(after), ActionFieldManager) {
		t.Errorf("a failed action changed the Deployment (managers %v):\n%s", fieldManagers(after), diff)
	}
}
