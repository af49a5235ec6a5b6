package render

import (
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// TestBenchFixtures renders B5's fixtures (testdata/bench, the rows of
// BenchmarkRender) and checks what each must be: the benchmark times
// them, so a fixture that rendered less would make its figure a lie.
func TestBenchFixtures(t *testing.T) {
	const repo = "https://git.example.com/bench.git"
	checks := map[string]func(t *testing.T, objs []*unstructured.Unstructured){
		"guestbook": func(t *testing.T, objs []*unstructured.Unstructured) {
			wantNames(t, objs, "Deployment/guestbook-ui", "Service/guestbook-ui")
		},
		"kustomize-guestbook": func(t *testing.T, objs []*unstructured.Unstructured) {
			wantNames(t, objs, "Service/kustomize-guestbook-ui", "Deployment/kustomize-guestbook-ui") // Kustomize orders by kind too
			for _, o := range objs {
				if o.GetLabels()["app.kubernetes.io/part-of"] != "guestbook" {
					t.Errorf("%s: labels %v, want the kustomization's", o.GetName(), o.GetLabels())
				}
			}
		},
		"helm-guestbook": func(t *testing.T, objs []*unstructured.Unstructured) {
			wantNames(t, objs, "Service/bench-helm-guestbook", "Deployment/bench-helm-guestbook") // Helm's install order
			for _, o := range objs {
				switch o.GetKind() {
				case "Deployment": // values-production.yaml over values.yaml
					replicas, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
					containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
					image := ""
					if len(containers) == 1 {
						image, _, _ = unstructured.NestedString(containers[0].(map[string]any), "image")
					}
					if replicas != 3 || image != "gcr.io/heptio-images/ks-guestbook-demo:0.2" {
						t.Errorf("deployment: %d replicas of %q, want 3 of the production tag", replicas, image)
					}
				case "Service":
					if typ, _, _ := unstructured.NestedString(o.Object, "spec", "type"); typ != "LoadBalancer" {
						t.Errorf("service type %q, want the production values' LoadBalancer", typ)
					}
				}
			}
		},
		"helm-300": func(t *testing.T, objs []*unstructured.Unstructured) {
			kinds := map[string]int{}
			for _, o := range objs {
				kinds[o.GetKind()]++
			}
			if kinds["ConfigMap"] != 100 || kinds["Service"] != 100 || kinds["Deployment"] != 100 {
				t.Errorf("kinds = %v, want 100 ConfigMaps, Services and Deployments", kinds)
			}
		},
	}
	root, err := filepath.Abs(filepath.Join("testdata", "bench"))
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, tool := range benchTools {
		if tool.fixture != "bench" {
			continue
		}
		rows++
		t.Run(tool.name, func(t *testing.T) {
			check := checks[tool.name]
			if check == nil {
				t.Fatalf("no check for the fixture %s", tool.name)
			}
			r, err := NewRenderer(Config{Store: &MemoryStore{}, Git: helmCheckouter{repo: root},
				CacheDir: t.TempDir(), Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			src := appspec.Source{RepoURL: repo, Path: tool.path}
			if tool.source != nil {
				tool.source(&src)
			}
			ref, err := r.Render(t.Context(), SingleSource("bench-"+tool.name, "default", src, "c1"), true)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := r.Load(t.Context(), ref)
			if err != nil {
				t.Fatal(err)
			}
			if ref.Count != tool.objects || len(objs) != tool.objects {
				t.Fatalf("rendered %d objects (ref says %d), want %d", len(objs), ref.Count, tool.objects)
			}
			check(t, objs)
		})
	}
	if rows != len(checks) {
		t.Fatalf("%d bench rows use testdata/bench, %d checks", rows, len(checks))
	}
}

// wantNames fails unless objs are exactly the kind/name pairs, in order.
func wantNames(t *testing.T, objs []*unstructured.Unstructured, want ...string) {
	t.Helper()
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+"/"+o.GetName())
	}
	if len(got) != len(want) {
		t.Fatalf("objects %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("objects %v, want %v", got, want)
		}
	}
}
