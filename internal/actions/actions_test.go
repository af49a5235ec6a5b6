package actions

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/health"
)

var testNow = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func object(apiVersion, kind, name string, spec map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	o.SetAPIVersion(apiVersion)
	o.SetKind(kind)
	o.SetName(name)
	o.SetNamespace("ns")
	o.SetUID("uid-1")
	return o
}

func deployment(spec map[string]any) *unstructured.Unstructured {
	return object("apps/v1", "Deployment", "web", spec)
}

func cronJob(spec map[string]any) *unstructured.Unstructured {
	return object("batch/v1", "CronJob", "nightly", spec)
}

// writeTree writes files (path → content) under a new directory.
func writeTree(t *testing.T, files map[string]string) string {
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
	return dir
}

func newCatalog(t *testing.T, files map[string]string) *Catalog {
	t.Helper()
	opts := Options{}
	if files != nil {
		opts.CustomizationsDir = writeTree(t, files)
		sb, err := health.New(health.Options{MaxInstructions: 100_000, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		opts.Sandbox = sb
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	c.now = func() time.Time { return testNow }
	return c
}

func names(as []Action) []string {
	var out []string
	for _, a := range as {
		s := a.Name + ":" + a.Source
		if a.Disabled {
			s += ":disabled"
		}
		for _, p := range a.Params {
			s += ":" + p.Name + "=" + p.Default
		}
		out = append(out, s)
	}
	return out
}

func TestListBuiltins(t *testing.T) {
	c := newCatalog(t, nil)
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		want []string
	}{
		{"deployment", deployment(map[string]any{"replicas": int64(2)}),
			[]string{"pause:builtin", "restart:builtin", "resume:builtin:disabled", "scale:builtin:replicas=2"}},
		{"paused deployment", deployment(map[string]any{"paused": true}),
			[]string{"pause:builtin:disabled", "restart:builtin", "resume:builtin", "scale:builtin:replicas="}},
		{"statefulset", object("apps/v1", "StatefulSet", "db", map[string]any{"replicas": int64(3)}),
			[]string{"restart:builtin", "scale:builtin:replicas=3"}},
		{"daemonset", object("apps/v1", "DaemonSet", "agent", map[string]any{}), []string{"restart:builtin"}},
		{"cronjob", cronJob(map[string]any{}), []string{"create-job:builtin", "resume:builtin:disabled", "suspend:builtin"}},
		{"suspended cronjob", cronJob(map[string]any{"suspend": true}), []string{"create-job:builtin", "resume:builtin", "suspend:builtin:disabled"}},
		{"configmap", object("v1", "ConfigMap", "cm", nil), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.List(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, names(got)); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunBuiltins(t *testing.T) {
	c := newCatalog(t, nil)
	for _, tc := range []struct {
		name    string
		obj     *unstructured.Unstructured
		action  string
		params  map[string]string
		path    []string
		want    any
		wantErr error
	}{
		{name: "restart", obj: deployment(map[string]any{}), action: Restart,
			path: []string{"spec", "template", "metadata", "annotations", restartedAtKey}, want: "2026-11-26T12:00:00Z"},
		{name: "restart statefulset", obj: object("apps/v1", "StatefulSet", "db", map[string]any{}), action: Restart,
			path: []string{"spec", "template", "metadata", "annotations", restartedAtKey}, want: "2026-11-26T12:00:00Z"},
		{name: "pause", obj: deployment(map[string]any{}), action: Pause, path: []string{"spec", "paused"}, want: true},
		{name: "resume", obj: deployment(map[string]any{"paused": true}), action: Resume, path: []string{"spec", "paused"}, want: false},
		{name: "resume not paused", obj: deployment(map[string]any{}), action: Resume, wantErr: ErrDisabled},
		{name: "scale", obj: deployment(map[string]any{"replicas": int64(1)}), action: Scale, params: map[string]string{"replicas": "4"},
			path: []string{"spec", "replicas"}, want: int64(4)},
		{name: "scale bad replicas", obj: deployment(map[string]any{}), action: Scale, params: map[string]string{"replicas": "many"}, wantErr: ErrInvalid},
		{name: "scale negative", obj: deployment(map[string]any{}), action: Scale, params: map[string]string{"replicas": "-1"}, wantErr: ErrInvalid},
		{name: "scale daemonset", obj: object("apps/v1", "DaemonSet", "agent", map[string]any{}), action: Scale, wantErr: ErrUnknown},
		{name: "suspend", obj: cronJob(map[string]any{}), action: Suspend, path: []string{"spec", "suspend"}, want: true},
		{name: "resume cronjob", obj: cronJob(map[string]any{"suspend": true}), action: Resume, path: []string{"spec", "suspend"}, want: false},
		{name: "unknown", obj: deployment(map[string]any{}), action: "explode", wantErr: ErrUnknown},
		{name: "create-job without template", obj: cronJob(map[string]any{}), action: CreateJob, wantErr: ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops, err := c.Run(tc.obj, tc.action, tc.params)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(ops) != 1 || ops[0].Type != OpPatch {
				t.Fatalf("ops = %+v, want one patch", ops)
			}
			got, _, _ := unstructured.NestedFieldNoCopy(ops[0].Object.Object, tc.path...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%v (-want +got):\n%s", tc.path, diff)
			}
			if _, changed, _ := unstructured.NestedFieldNoCopy(tc.obj.Object, tc.path...); changed && tc.action == Restart {
				t.Error("the action changed the object it was given")
			}
		})
	}
}

func TestCreateJob(t *testing.T) {
	c := newCatalog(t, nil)
	cron := cronJob(map[string]any{"jobTemplate": map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"team": "a"}},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"restartPolicy": "Never"}}},
	}})
	ops, err := c.Run(cron, CreateJob, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 1 || ops[0].Type != OpCreate {
		t.Fatalf("ops = %+v, want one create", ops)
	}
	job := ops[0].Object
	got := map[string]any{
		"kind": job.GetKind(), "name": job.GetName(), "namespace": job.GetNamespace(), "labels": job.GetLabels(),
		"annotations": job.GetAnnotations(), "owner": job.GetOwnerReferences()[0].Name,
	}
	want := map[string]any{
		"kind": "Job", "name": "nightly-manual-1795694400", "namespace": "ns", "labels": map[string]string{"team": "a"},
		"annotations": map[string]string{instantiateKey: "manual"}, "owner": "nightly",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("job (-want +got):\n%s", diff)
	}
	if rp, _, _ := unstructured.NestedString(job.Object, "spec", "template", "spec", "restartPolicy"); rp != "Never" {
		t.Errorf("restartPolicy = %q, want the template's", rp)
	}
}

// luaTree is a customizations tree with actions for Deployments and
// ConfigMaps.
var luaTree = map[string]string{
	"apps/Deployment/health.lua": `return {status = "Healthy"}`,
	"apps/Deployment/actions/discovery.lua": `
local actions = {}
actions["restart"] = {}
actions["set-tier"] = {["params"] = {{["name"] = "tier", ["default"] = "gold"}}}
actions["spin"] = {}
actions["bad-return"] = {}
actions["other-object"] = {}
actions["frozen"] = {["disabled"] = true}
actions["scale"] = {}
return actions`,
	"apps/Deployment/actions/restart/action.lua": `
obj.metadata.annotations = obj.metadata.annotations or {}
obj.metadata.annotations["lua-restart"] = "yes"
return obj`,
	"apps/Deployment/actions/set-tier/action.lua": `
obj.metadata.labels = {tier = actionParams["tier"]}
return obj`,
	"apps/Deployment/actions/spin/action.lua":         `while true do end`,
	"apps/Deployment/actions/bad-return/action.lua":   `return "done"`,
	"apps/Deployment/actions/other-object/action.lua": `obj.metadata.name = "someone-else" return obj`,
	"apps/Deployment/actions/frozen/action.lua":       `return obj`,
	"ConfigMap/actions/discovery.lua":                 `return {copy = {}}`,
	"ConfigMap/actions/copy/action.lua": `
local copy = {apiVersion = "v1", kind = "ConfigMap", metadata = {name = obj.metadata.name .. "-copy"}, data = obj.data}
obj.data.copied = "true"
return {{operation = "patch", resource = obj}, {operation = "create", resource = copy}}`,
}

func TestLuaList(t *testing.T) {
	c := newCatalog(t, luaTree)
	got, err := c.List(deployment(map[string]any{"replicas": int64(1)}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bad-return:lua", "frozen:lua:disabled", "other-object:lua", "pause:builtin", "restart:lua",
		"resume:builtin:disabled", "scale:builtin:replicas=1", "set-tier:lua:tier=gold", "spin:lua"}
	if diff := cmp.Diff(want, names(got)); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
}

func TestLuaRun(t *testing.T) {
	c := newCatalog(t, luaTree)
	cm := object("v1", "ConfigMap", "settings", nil)
	cm.Object["data"] = map[string]any{"a": "1"}
	delete(cm.Object, "spec")
	for _, tc := range []struct {
		name    string
		obj     *unstructured.Unstructured
		action  string
		params  map[string]string
		want    []string // operation type, kind/name and the JSON path checked
		check   func(t *testing.T, ops []Operation)
		wantErr error
		errText string
	}{
		{name: "v1 overrides the built-in restart", obj: deployment(map[string]any{}), action: Restart, check: func(t *testing.T, ops []Operation) {
			if got := ops[0].Object.GetAnnotations()["lua-restart"]; got != "yes" {
				t.Errorf("annotation = %q, want the Lua restart's", got)
			}
		}},
		{name: "parameters", obj: deployment(map[string]any{}), action: "set-tier", params: map[string]string{"tier": "silver"}, check: func(t *testing.T, ops []Operation) {
			if diff := cmp.Diff(map[string]string{"tier": "silver"}, ops[0].Object.GetLabels()); diff != "" {
				t.Error(diff)
			}
		}},
		{name: "built-in named by discovery without a script", obj: deployment(map[string]any{}), action: Scale, params: map[string]string{"replicas": "2"},
			check: func(t *testing.T, ops []Operation) {
				if n, _, _ := unstructured.NestedInt64(ops[0].Object.Object, "spec", "replicas"); n != 2 {
					t.Errorf("replicas = %d, want 2", n)
				}
			}},
		{name: "v2 patch and create", obj: cm, action: "copy", check: func(t *testing.T, ops []Operation) {
			got := []string{ops[0].Type + " " + ops[0].Object.GetName(), ops[1].Type + " " + ops[1].Object.GetNamespace() + "/" + ops[1].Object.GetName()}
			if diff := cmp.Diff([]string{"patch settings", "create ns/settings-copy"}, got); diff != "" {
				t.Error(diff)
			}
		}},
		{name: "loops forever", obj: deployment(map[string]any{}), action: "spin", wantErr: ErrInvalid, errText: "exceeded its instruction budget"},
		{name: "returns a string", obj: deployment(map[string]any{}), action: "bad-return", wantErr: ErrInvalid, errText: "want the changed object or a list of operations"},
		{name: "patches another object", obj: deployment(map[string]any{}), action: "other-object", wantErr: ErrInvalid, errText: "a patch may only change Deployment web"},
		{name: "disabled", obj: deployment(map[string]any{}), action: "frozen", wantErr: ErrDisabled},
		{name: "unknown", obj: deployment(map[string]any{}), action: "nope", wantErr: ErrUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops, err := c.Run(tc.obj, tc.action, tc.params)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("err = %v, want %v with %q", err, tc.wantErr, tc.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, ops)
		})
	}
}

func TestRestoreLists(t *testing.T) {
	orig := map[string]any{"spec": map[string]any{"args": []any{"a"}, "env": map[string]any{"x": "1"}}}
	changed := map[string]any{"spec": map[string]any{"args": map[string]any{}, "env": map[string]any{}}}
	want := map[string]any{"spec": map[string]any{"args": []any{}, "env": map[string]any{}}}
	if diff := cmp.Diff(want, restoreLists(orig, changed)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
