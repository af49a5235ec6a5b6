package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
	"github.com/windlass-cd/windlass/internal/appspec"
)

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func configMap(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"
}

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.25
`

// renderCLI runs `windlass render` in-process.
func renderCLI(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = runRender(t.Context(), args, &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestRenderLocal(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"plain/b.yaml":               configMap("b") + "---\n" + configMap("c"),
		"plain/a.yaml":               configMap("a"),
		"kust/kustomization.yaml":    "resources: [deployment.yaml]\nnamePrefix: dev-\n",
		"kust/deployment.yaml":       deployment,
		"jn/main.jsonnet":            "function(name='x') { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: name } }",
		"mixed/a.yaml":               configMap("from-yaml"),
		"mixed/b.jsonnet":            "{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'from-jsonnet' } }",
		"nested/dir/app/cm.yaml":     configMap("nested"),
		"nested/dir/app/notes.txt":   "ignored",
		"nested/dir/app/x/deep.yaml": configMap("deep"),
	})
	tests := []struct {
		name string
		args []string
		want string
	}{
		{
			name: "directory",
			args: []string{"--root", root, "--path", "plain"},
			want: configMap("a") + "---\n" + configMap("b") + "---\n" + configMap("c"),
		},
		{
			name: "kustomize",
			args: []string{"--root", root, "--path", "kust"},
			want: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: dev-web\nspec:\n  selector:\n    matchLabels:\n      app: web\n" +
				"  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - image: nginx:1.25\n        name: web\n",
		},
		{
			name: "kustomize image override",
			args: []string{"--root", root, "--path", "kust", "--kustomize-image", "nginx=registry.example.com/nginx:1.27"},
			want: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: dev-web\nspec:\n  selector:\n    matchLabels:\n      app: web\n" +
				"  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - image: registry.example.com/nginx:1.27\n        name: web\n",
		},
		{
			name: "jsonnet with a top-level argument",
			args: []string{"--root", root, "--path", "jn", "--jsonnet-tla", "name=from-tla"},
			want: configMap("from-tla"),
		},
		{
			name: "detected jsonnet renders YAML files too",
			args: []string{"--root", root, "--path", "mixed"},
			want: configMap("from-yaml") + "---\n" + configMap("from-jsonnet"),
		},
		{
			name: "forced directory tool",
			args: []string{"--root", root, "--path", "mixed", "--tool", "directory"},
			want: configMap("from-yaml"),
		},
		{
			name: "path relative to the current directory",
			args: []string{"--path", "nested/dir/app"},
			want: configMap("nested"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "path relative to the current directory" {
				t.Chdir(root)
			}
			out, stderr, err := renderCLI(t, tt.args...)
			if err != nil {
				t.Fatalf("render: %v\nstderr: %s", err, stderr)
			}
			if d := cmp.Diff(tt.want, out); d != "" {
				t.Fatalf("output (-want +got):\n%s", d)
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"app/cm.yaml": configMap("a"), "bad/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: [\n"})
	tests := []struct {
		name     string
		args     []string
		usage    bool
		contains string
	}{
		{name: "missing path", args: []string{"--root", root, "--path", "nope"}, contains: "path not found"},
		{name: "path out of the repository", args: []string{"--root", root, "--path", "../../etc"}, contains: "bad repository path"},
		{name: "bad manifest", args: []string{"--root", root, "--path", "bad"}, contains: "cm.yaml: document 1: yaml: line 3"},
		{name: "unknown tool", args: []string{"--root", root, "--tool", "ksonnet"}, usage: true, contains: `--tool "ksonnet"`},
		{name: "flags of two tools", args: []string{"--root", root, "--helm-set", "a=b", "--kustomize-image", "x:1"}, usage: true, contains: "several tools"},
		{name: "tool and flags disagree", args: []string{"--root", root, "--tool", "kustomize", "--jsonnet-tla", "a=b"}, usage: true, contains: "--tool kustomize with jsonnet flags"},
		{name: "bad helm parameter", args: []string{"--root", root, "--helm-set", "novalue"}, usage: true, contains: "want NAME=VALUE"},
		{name: "unknown flag", args: []string{"--bogus"}, usage: true, contains: "flag provided but not defined"},
		{name: "missing repository", args: []string{"--repo", "file://" + filepath.Join(root, "no-such-repo"), "--path", "app"}, contains: "no-such-repo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, err := renderCLI(t, tt.args...)
			if err == nil {
				t.Fatalf("render succeeded:\n%s", out)
			}
			if errors.Is(err, cmdline.ErrUsage) != tt.usage {
				t.Fatalf("usage error = %v, want %v (%v)", errors.Is(err, cmdline.ErrUsage), tt.usage, err)
			}
			// main prints "windlass: <err>" for other errors; usage errors print themselves.
			msg := stderr
			if !tt.usage {
				msg = err.Error()
			}
			if !strings.Contains(msg, tt.contains) {
				t.Fatalf("message %q does not mention %q", msg, tt.contains)
			}
			if out != "" {
				t.Fatalf("stdout = %q, want nothing", out)
			}
		})
	}
}

// TestRenderRepo renders from a Git repository made in the test, through
// the worker's Git code (resolve, mirror, checkout), at a branch.
func TestRenderRepo(t *testing.T) {
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	commit := func(files map[string]string, msg string) plumbing.Hash {
		writeTree(t, dir, files)
		if err := wt.AddGlob("."); err != nil {
			t.Fatal(err)
		}
		h, err := wt.Commit(msg, &git.CommitOptions{Author: &object.Signature{Name: "test", Email: "test@example.com", When: time.Unix(1700000000, 0)}})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	first := commit(map[string]string{"app/kustomization.yaml": "resources: [cm.yaml]\n", "app/cm.yaml": configMap("v1")}, "v1")
	if err := repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/release", first)); err != nil {
		t.Fatal(err)
	}
	commit(map[string]string{"app/cm.yaml": configMap("v2")}, "v2")
	url := "file://" + dir

	tests := []struct{ revision, want string }{
		{"release", configMap("v1")},
		{"HEAD", configMap("v2")},
		{first.String(), configMap("v1")},
	}
	for _, tt := range tests {
		t.Run(tt.revision, func(t *testing.T) {
			out, stderr, err := renderCLI(t, "--repo", url, "--revision", tt.revision, "--path", "app")
			if err != nil {
				t.Fatalf("render: %v\nstderr: %s", err, stderr)
			}
			if d := cmp.Diff(tt.want, out); d != "" {
				t.Fatalf("output (-want +got):\n%s", d)
			}
		})
	}
	t.Run("unknown revision", func(t *testing.T) {
		_, _, err := renderCLI(t, "--repo", url, "--revision", "nope", "--path", "app")
		if err == nil || !strings.Contains(err.Error(), "nope") {
			t.Fatalf("error = %v, want it to name the revision", err)
		}
	})
}

// TestRenderFlagsToSpec checks how the tool flags map into the source spec.
func TestRenderFlagsToSpec(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	writeTree(t, root, map[string]string{"charts/web/values-prod.yaml": "a: 1\n", "shared/common.yaml": "b: 2\n"})
	writeTree(t, outside, map[string]string{"one.yaml": "x: {k: 1, z: 1}\nlist: [1]\n", "two.yaml": "x: {z: 2}\nlist: [2]\n"})
	t.Chdir(root)
	tests := []struct {
		name string
		args []string
		root string
		want appspec.Source
	}{
		{
			name: "helm",
			args: []string{"--path", "charts/web", "--helm-set", "image.tag=1.2", "--helm-set", "a=b=c", "--helm-set-string", "port=80",
				"--release-name", "prod", "--values", "charts/web/values-prod.yaml", "--values", "shared/common.yaml",
				"--values", filepath.Join(outside, "one.yaml"), "--values", filepath.Join(outside, "two.yaml")},
			root: root,
			want: appspec.Source{Path: "charts/web", Helm: &appspec.Helm{
				ReleaseName: "prod",
				Parameters: []appspec.HelmParameter{
					{Name: "image.tag", Value: "1.2"}, {Name: "a", Value: "b=c"}, {Name: "port", Value: "80", ForceString: true},
				},
				ValueFiles:   []string{"values-prod.yaml", "../../shared/common.yaml"},
				ValuesObject: map[string]any{"x": map[string]any{"k": float64(1), "z": float64(2)}, "list": []any{float64(2)}},
			}},
		},
		{
			name: "helm with --repo: value files in the repository",
			args: []string{"--path", "charts/web", "--values", "values-prod.yaml"},
			want: appspec.Source{Path: "charts/web", Helm: &appspec.Helm{ValueFiles: []string{"values-prod.yaml"}}},
		},
		{
			name: "kustomize",
			args: []string{"--path", "k", "--kustomize-image", "nginx=nginx:1.27", "--kustomize-image", "redis:7"},
			want: appspec.Source{Path: "k", Kustomize: &appspec.Kustomize{Images: []string{"nginx=nginx:1.27", "redis:7"}}},
		},
		{
			name: "jsonnet",
			args: []string{"--path", "j", "--jsonnet-tla", "env=prod", "--jsonnet-ext-var", "team=a", "--jsonnet-lib", "lib"},
			want: appspec.Source{Path: "j", Directory: &appspec.Directory{Jsonnet: &appspec.Jsonnet{
				TLAs: []appspec.JsonnetVar{{Name: "env", Value: "prod"}}, ExtVars: []appspec.JsonnetVar{{Name: "team", Value: "a"}}, Libs: []string{"lib"},
			}}},
		},
		{
			name: "plugin",
			args: []string{"--path", "p", "--plugin", "cue"},
			want: appspec.Source{Path: "p", Plugin: &appspec.Plugin{Name: "cue"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseRenderFlags(tt.args, &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			src := appspec.Source{Path: o.path}
			if err := o.applyToolFlags(&src, tt.root); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, src); d != "" {
				t.Fatalf("source (-want +got):\n%s", d)
			}
		})
	}
}

func TestDefaultAppName(t *testing.T) {
	for _, tt := range []struct{ path, root, want string }{
		{"apps/guestbook", "", "guestbook"},
		{".", "/src/My_Repo", "app"},
		{".", "/src/shop", "shop"},
		{"charts/Web", "", "web"},
	} {
		if got := defaultAppName(tt.path, tt.root); got != tt.want {
			t.Errorf("defaultAppName(%q, %q) = %q, want %q", tt.path, tt.root, got, tt.want)
		}
	}
}
