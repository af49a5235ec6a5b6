package render

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// flattenRef reads the objects of a reference jsonnet output: an object,
// or arrays of them at any depth.
func flattenRef(t *testing.T, out []byte) []*unstructured.Unstructured {
	t.Helper()
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	var walk func(v any)
	walk = func(v any) {
		if arr, ok := v.([]any); ok {
			for _, item := range arr {
				walk(item)
			}
			return
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, parseRef(t, "jsonnet output", b)...)
	}
	walk(v)
	return objs
}

// TestJsonnetGolden compares each file's evaluation byte for byte with
// the jsonnet CLI given the same variables and library paths (the app
// directory, then the libs, as Argo CD sets them), and the rendered
// objects with the CLI's output, file by file in path order.
func TestJsonnetGolden(t *testing.T) {
	jbin := refTool(t, "jsonnet")
	root, err := filepath.Abs("testdata/jsonnet")
	if err != nil {
		t.Fatal(err)
	}
	vars := &appspec.Jsonnet{
		TLAs: []appspec.JsonnetVar{{Name: "env", Value: "prod"}, {Name: "replicas", Value: "3", Code: true}},
		ExtVars: []appspec.JsonnetVar{
			{Name: "team", Value: "platform-$ARGOCD_APP_NAME"},
			{Name: "debug", Value: "std.length('$ARGOCD_APP_NAMESPACE') > 0", Code: true},
		},
		Libs: []string{"lib"},
	}
	cliVars := []string{"--tla-str", "env=prod", "--tla-code", "replicas=3", "--ext-str", "team=platform-guestbook",
		"--ext-code", "debug=std.length('web') > 0", "-J", "app", "-J", "lib"}
	tests := []struct {
		name  string
		dir   *appspec.Directory
		files []string // in render order
		cli   [][]string
	}{
		{
			name:  "top level",
			dir:   &appspec.Directory{Jsonnet: vars},
			files: []string{"app/list.jsonnet", "app/main.jsonnet", "app/namespace.yaml"},
			cli:   [][]string{nil, cliVars},
		},
		{
			name:  "recurse with exclude",
			dir:   &appspec.Directory{Recurse: true, Exclude: "list.jsonnet", Jsonnet: vars},
			files: []string{"app/main.jsonnet", "app/namespace.yaml", "app/sub/extra.jsonnet"},
			cli:   [][]string{cliVars, nil, nil},
		},
		{
			name:  "include",
			dir:   &appspec.Directory{Recurse: true, Include: "*.jsonnet", Exclude: "main.jsonnet", Jsonnet: &appspec.Jsonnet{}},
			files: []string{"app/list.jsonnet", "app/sub/extra.jsonnet"},
			cli:   [][]string{nil, nil},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := appspec.Source{RepoURL: "https://example.com/web.git", Path: "app", Directory: tt.dir}
			req := SingleSource("guestbook", "web", src, "0123456789abcdef0123456789abcdef01234567")
			dir, err := appDir(root, "app")
			if err != nil {
				t.Fatal(err)
			}
			in := toolInput{Root: root, Dir: dir, Source: req.Sources[0], AppName: req.AppName, Namespace: req.Namespace}
			jopts := appspec.Jsonnet{}
			if tt.dir.Jsonnet != nil {
				jopts = *tt.dir.Jsonnet
			}
			var want []*unstructured.Unstructured
			cli := 0
			for _, f := range tt.files {
				if !strings.HasSuffix(f, ".jsonnet") {
					b, err := os.ReadFile(filepath.Join(root, f))
					if err != nil {
						t.Fatal(err)
					}
					want = append(want, parseRef(t, f, b)...)
					continue
				}
				out := runRef(t, root, jbin, append(append([]string{}, tt.cli[cli]...), f)...)
				cli++
				imp, err := newJsonnetImporter(in, jopts.Libs)
				if err != nil {
					t.Fatal(err)
				}
				got, err := evalJsonnet(t.Context(), imp, f, jopts, newBuildEnv(in))
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(string(out), got); d != "" {
					t.Fatalf("%s (-jsonnet CLI +ours):\n%s", f, d)
				}
				want = append(want, flattenRef(t, out)...)
			}
			objs, err := renderVia(t, root, nil, req)
			if err != nil {
				t.Fatal(err)
			}
			if d := diffObjects(want, objs); d != "" {
				t.Fatalf("rendered objects (-jsonnet CLI +ours):\n%s", d)
			}
		})
	}
}

func TestJsonnetErrors(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret.libsonnet": "{ password: 'hunter2' }", "main.jsonnet": "{}"})
	up := strings.Repeat("../", 12)
	writeFiles(t, root, map[string]string{
		"traversal/main.jsonnet": "importstr '" + up + filepath.ToSlash(outside)[1:] + "/secret.libsonnet'",
		"absolute/main.jsonnet":  "import '" + filepath.Join(outside, "secret.libsonnet") + "'",
		"symlink/main.jsonnet":   "import 'linked.libsonnet'",
		"libout/main.jsonnet":    "import 'secret.libsonnet'",
		"linkfile/ok.jsonnet":    "{}",
		"syntax/main.jsonnet":    "{ a: }",
		"notobject/main.jsonnet": "'just a string'",
		"missing/main.jsonnet":   "import 'nowhere.libsonnet'",
		"ok/main.jsonnet":        "[]",
	})
	links := map[string]string{
		"symlink/linked.libsonnet": filepath.Join(outside, "secret.libsonnet"),
		"outlib":                   outside,
		"linkfile/main.jsonnet":    filepath.Join(outside, "main.jsonnet"),
	}
	for link, target := range links {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		path     string
		libs     []string
		err      error
		contains string
	}{
		{path: "traversal", err: ErrBadPath, contains: "leaves the repository"},
		{path: "absolute", err: ErrBadPath, contains: "absolute imports"},
		{path: "symlink", err: ErrBadPath, contains: "leads out of the repository"},
		{path: "libout", libs: []string{"outlib"}, err: ErrBadPath, contains: "outlib"},
		{path: "libout", libs: []string{"../elsewhere"}, err: ErrBadPath, contains: "inside the repository"},
		{path: "linkfile", err: ErrBadPath, contains: `"linkfile/main.jsonnet" leads out of the repository`},
		{path: "syntax", err: ErrJsonnet, contains: "syntax/main.jsonnet:1"},
		{path: "notobject", err: manifest.ErrInvalidManifest, contains: "notobject/main.jsonnet"},
		{path: "missing", err: ErrJsonnet, contains: "nowhere.libsonnet"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			src := appspec.Source{RepoURL: "https://example.com/r.git", Path: tt.path,
				Directory: &appspec.Directory{Jsonnet: &appspec.Jsonnet{Libs: tt.libs}}}
			_, err := renderVia(t, root, nil, SingleSource("app", "default", src, "sha"))
			wantError(t, err, tt.err, tt.contains, "hunter2", root)
		})
	}
	t.Run("empty array", func(t *testing.T) {
		src := appspec.Source{RepoURL: "https://example.com/r.git", Path: "ok", Directory: &appspec.Directory{Jsonnet: &appspec.Jsonnet{}}}
		objs, err := renderVia(t, root, nil, SingleSource("app", "default", src, "sha"))
		if err != nil || len(objs) != 0 {
			t.Fatalf("render = %d objects, %v", len(objs), err)
		}
	})
}

// TestJsonnetCancel checks that a render returns when its context ends
// although go-jsonnet cannot be interrupted (the evaluation finishes in
// the background, in about a second).
func TestJsonnetCancel(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"slow/main.jsonnet": "std.foldl(function(a, b) a + b, std.range(1, 400000), 0)",
	})
	dir, err := appDir(root, "slow")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	in := toolInput{Root: root, Dir: dir, Source: SourceRequest{Source: appspec.Source{Path: "slow"}}}
	_, err = (&Renderer{}).renderJsonnet(ctx, in)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("render returned after %s, want soon after the deadline", d)
	}
}

// A directory source with options (Argo CD's "directory: {jsonnet: {}}",
// or recurse) still evaluates its Jsonnet files, as Argo CD does.
func TestDirectoryOptionsEvaluateJsonnet(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"app/main.jsonnet":   "{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'from-jsonnet' } }\n",
		"app/sub/cm.jsonnet": "{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'from-sub' } }\n",
		"app/plain.yaml":     cm("plain"),
	})
	for _, tc := range []struct {
		name string
		dir  appspec.Directory
		want []string
	}{
		{name: "empty options", want: []string{"from-jsonnet", "plain"}},
		{name: "recurse", dir: appspec.Directory{Recurse: true}, want: []string{"from-jsonnet", "from-sub", "plain"}},
		{name: "include", dir: appspec.Directory{Include: "*.yaml"}, want: []string{"plain"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := appspec.Source{RepoURL: "https://example.com/r.git", Path: "app", Directory: &tc.dir}
			objs, err := renderVia(t, root, nil, SingleSource("app", "default", src, "sha"))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, o.GetName())
			}
			slices.Sort(got)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Fatalf("names (-want +got):\n%s", d)
			}
		})
	}
}
