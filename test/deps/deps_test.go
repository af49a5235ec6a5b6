package deps

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/casbin/casbin/v2"
	"github.com/casbin/casbin/v2/model"
	stringadapter "github.com/casbin/casbin/v2/persist/string-adapter"
	"github.com/dexidp/dex/storage"
	"github.com/dexidp/dex/storage/memory"
	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/google/go-jsonnet"
	"github.com/itchyny/gojq"
	lua "github.com/yuin/gopher-lua"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func TestHelmV4RendersAChart(t *testing.T) {
	ch, err := loader.LoadFiles([]*archive.BufferedFile{
		{Name: "Chart.yaml", Data: []byte("apiVersion: v2\nname: demo\nversion: 0.1.0\n")},
		{Name: "values.yaml", Data: []byte("replicas: 2\n")},
		{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\ndata:\n  replicas: {{ .Values.replicas | quote }}\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	vals, err := util.ToRenderValues(ch, map[string]any{"replicas": 3}, common.ReleaseOptions{Name: "rel", Namespace: "ns"}, common.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.Render(ch, vals)
	if err != nil {
		t.Fatal(err)
	}
	got := out["demo/templates/cm.yaml"]
	if !strings.Contains(got, "name: rel-cm") || !strings.Contains(got, `replicas: "3"`) {
		t.Fatalf("rendered:\n%s", got)
	}
}

func TestKustomizeBuildsInProcess(t *testing.T) {
	fs := filesys.MakeFsInMemory()
	must(t, fs.WriteFile("/app/kustomization.yaml", []byte("namePrefix: dev-\nresources: [cm.yaml]\n")))
	must(t, fs.WriteFile("/app/cm.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\n")))
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/app")
	if err != nil {
		t.Fatal(err)
	}
	if n := res.Resources()[0].GetName(); n != "dev-cfg" {
		t.Fatalf("name = %q, want dev-cfg", n)
	}
}

func TestCasbinArgoPolicyFormat(t *testing.T) {
	m, err := model.NewModelFromString(`[request_definition]
r = sub, res, act, obj
[policy_definition]
p = sub, res, act, obj, eft
[role_definition]
g = _, _
[policy_effect]
e = some(where (p.eft == allow)) && !some(where (p.eft == deny))
[matchers]
m = g(r.sub, p.sub) && keyMatch(r.res, p.res) && keyMatch(r.act, p.act) && keyMatch(r.obj, p.obj)`)
	if err != nil {
		t.Fatal(err)
	}
	e, err := casbin.NewEnforcer(m, stringadapter.NewAdapter("p, role:dev, applications, sync, default/*, allow\ng, alice, role:dev"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sub, act string
		want     bool
	}{{"alice", "sync", true}, {"alice", "delete", false}, {"bob", "sync", false}} {
		if ok, err := e.Enforce(c.sub, "applications", c.act, "default/guestbook"); err != nil || ok != c.want {
			t.Fatalf("%s %s = %v (%v), want %v", c.sub, c.act, ok, err, c.want)
		}
	}
}

func TestGopherLuaHealthScript(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	must(t, L.DoString(`hs = {status = "Healthy", message = "ok"}`))
	if got := L.GetField(L.GetGlobal("hs"), "status").String(); got != "Healthy" {
		t.Fatalf("hs.status = %q", got)
	}
}

func TestJsonnetAndGojq(t *testing.T) {
	js, err := jsonnet.MakeVM().EvaluateAnonymousSnippet("x.jsonnet", `{replicas: 1 + 2}`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js, `"replicas": 3`) {
		t.Fatalf("jsonnet = %s", js)
	}
	q, err := gojq.Parse(".spec.replicas")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := q.Run(map[string]any{"spec": map[string]any{"replicas": 3}}).Next()
	if v != 3 {
		t.Fatalf("gojq = %v", v)
	}
}

func TestKstatus(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w", "generation": int64(1)},
		"status": map[string]any{"observedGeneration": int64(1), "conditions": []any{map[string]any{"type": "Ready", "status": "False", "reason": "Broken"}}},
	}}
	res, err := status.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != status.InProgressStatus && res.Status != status.FailedStatus {
		t.Fatalf("kstatus = %s", res.Status)
	}
}

func TestDexStorage(t *testing.T) {
	s := memory.New(slog.Default())
	must(t, s.CreateClient(t.Context(), storage.Client{ID: "windlass", Secret: "x", RedirectURIs: []string{"http://127.0.0.1:8080/auth/callback"}}))
	c, err := s.GetClient(t.Context(), "windlass")
	if err != nil || c.RedirectURIs[0] != "http://127.0.0.1:8080/auth/callback" {
		t.Fatalf("client = %+v, %v", c, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
