package render

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/yaml"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// refTool is a reference CLI built by `make reftools` (bin/tools under the
// module root).
func refTool(t *testing.T, name string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
	bin := filepath.Join(dir, "bin", "tools", name)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s not found: run make reftools", bin)
	}
	return bin
}

// runRef runs a reference CLI in dir and returns its stdout.
func runRef(t *testing.T, dir, bin string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// fixedRoot is a Checkouter that always returns the same directory.
type fixedRoot string

func (f fixedRoot) Checkout(context.Context, string, string) (string, error) { return string(f), nil }

// renderVia runs the workers' code path: Render, then Load.
func renderVia(t *testing.T, root string, plugins []PluginConfig, req Request) ([]*unstructured.Unstructured, error) {
	t.Helper()
	return renderWith(t, root, plugins, nil, req)
}

// renderWith renders as renderVia does, with plugins run by server (nil:
// in process).
func renderWith(t *testing.T, root string, plugins []PluginConfig, server *PluginClient, req Request) ([]*unstructured.Unstructured, error) {
	t.Helper()
	r, err := NewRenderer(Config{Store: NewMemoryStore(), Git: fixedRoot(root), CacheDir: t.TempDir(), Plugins: plugins, PluginServer: server, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := r.Render(t.Context(), req, false)
	if err != nil {
		return nil, err
	}
	return r.Load(t.Context(), ref)
}

// parseRef parses a reference CLI's output the way our tools parse theirs.
func parseRef(t *testing.T, name string, out []byte) []*unstructured.Unstructured {
	t.Helper()
	objs, err := manifest.Parse(name, out)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func diffObjects(want, got []*unstructured.Unstructured) string {
	w := make([]map[string]any, len(want))
	for i := range want {
		w[i] = want[i].Object
	}
	g := make([]map[string]any, len(got))
	for i := range got {
		g[i] = got[i].Object
	}
	return cmp.Diff(w, g)
}

// treeDigest hashes every path, mode and content under dir.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v\n", p, info.Mode())
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// argoEdit applies overrides to the kustomization in dir exactly as Argo
// CD does, with the real kustomize CLI (and, for patches, by editing the
// YAML). vars stands in for Argo CD's build environment.
func argoEdit(t *testing.T, kbin, dir string, o appspec.Kustomize, vars map[string]string) {
	t.Helper()
	subst := func(s string) string { return os.Expand(s, func(k string) string { return vars[k] }) }
	edit := func(args ...string) { runRef(t, dir, kbin, append([]string{"edit"}, args...)...) }
	if o.NamePrefix != "" {
		edit("set", "nameprefix", "--", o.NamePrefix)
	}
	if o.NameSuffix != "" {
		edit("set", "namesuffix", "--", o.NameSuffix)
	}
	if len(o.Images) > 0 {
		args := []string{"set", "image"}
		for _, img := range o.Images {
			args = append(args, subst(img))
		}
		edit(args...)
	}
	if len(o.Replicas) > 0 {
		args := []string{"set", "replicas"}
		for _, r := range o.Replicas {
			args = append(args, fmt.Sprintf("%s=%d", r.Name, r.Count))
		}
		edit(args...)
	}
	addMeta := func(kind string, m map[string]string, expand, force bool, extra ...string) {
		if len(m) == 0 {
			return
		}
		args := []string{"add", kind}
		if force {
			args = append(args, "--force")
		}
		args = append(args, extra...)
		for k, v := range m {
			if expand {
				v = subst(v)
			}
			args = append(args, k+":"+v)
		}
		edit(args...)
	}
	var labelFlags []string
	if o.LabelWithoutSelector {
		labelFlags = append(labelFlags, "--without-selector")
	}
	if o.LabelIncludeTemplates {
		labelFlags = append(labelFlags, "--include-templates")
	}
	addMeta("label", o.CommonLabels, true, o.ForceCommonLabels, labelFlags...)
	addMeta("annotation", o.CommonAnnotations, o.CommonAnnotationsEnvsubst, o.ForceCommonAnnotations)
	if o.Namespace != "" {
		edit("set", "namespace", "--", o.Namespace)
	}
	if len(o.Patches) > 0 {
		file := filepath.Join(dir, "kustomization.yaml")
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var k map[string]any
		if err := yaml.Unmarshal(b, &k); err != nil {
			t.Fatal(err)
		}
		patches, _ := k["patches"].([]any)
		for _, p := range o.Patches {
			patches = append(patches, p)
		}
		k["patches"] = patches
		if b, err = yaml.Marshal(k); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(o.Components) > 0 {
		edit(append([]string{"add", "component"}, o.Components...)...)
	}
}

// TestKustomizeGolden compares our in-process build, overrides included,
// byte for byte with Argo CD's way: the real kustomize CLI's `edit`
// commands on a copy, then `kustomize build`.
func TestKustomizeGolden(t *testing.T) {
	kbin := refTool(t, "kustomize")
	fixture, err := filepath.Abs("testdata/kustomize")
	if err != nil {
		t.Fatal(err)
	}
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		name string
		path string
		opts *appspec.Kustomize
	}{
		{name: "base", path: "base"},
		{name: "overlay", path: "overlay"},
		{name: "overlay with every override", path: "overlay", opts: &appspec.Kustomize{
			NamePrefix: "prod-",
			NameSuffix: "-v2",
			Images: []string{
				"nginx=registry.example.com/mirror/nginx:1.27",
				"ghcr.io/example/sidecar@" + digest,
			},
			CommonLabels:      map[string]string{"team": "payments", "app.kubernetes.io/instance": "$ARGOCD_APP_NAME"},
			CommonAnnotations: map[string]string{"owner": "sre", "docs": "https://example.com/$ARGOCD_APP_NAME"},
			Namespace:         "shop",
			// Annotations are expanded only when asked.
			CommonAnnotationsEnvsubst: false,
			Replicas:                  []appspec.KustomizeReplica{{Name: "web", Count: 3}},
			Patches: []appspec.KustomizePatch{
				{
					Target: &appspec.KustomizeSelector{Kind: "Service", Name: "web"},
					Patch:  `[{"op": "replace", "path": "/spec/ports/0/port", "value": 8080}]`,
				},
				{Path: "scale-patch.yaml", Target: &appspec.KustomizeSelector{Group: "apps", Kind: "Deployment", LabelSelector: "app=web"}},
			},
			Components: []string{"../components/monitoring"},
		}},
		{name: "image forms", path: "base", opts: &appspec.Kustomize{
			Images: []string{"nginx:1.27@" + digest, "ghcr.io/example/sidecar=example.com/sidecar"},
		}},
		{name: "forced labels without selector", path: "overlay", opts: &appspec.Kustomize{
			CommonLabels:          map[string]string{"env": "prod", "tier": "web"},
			ForceCommonLabels:     true,
			LabelWithoutSelector:  true,
			LabelIncludeTemplates: true,
		}},
		{name: "forced common labels", path: "overlay", opts: &appspec.Kustomize{
			CommonLabels:      map[string]string{"env": "prod"},
			ForceCommonLabels: true,
		}},
		{name: "expanded annotations", path: "base", opts: &appspec.Kustomize{
			CommonAnnotations:         map[string]string{"revision": "${ARGOCD_APP_REVISION}", "app": "$ARGOCD_APP_NAME"},
			CommonAnnotationsEnvsubst: true,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := treeDigest(t, fixture)
			src := appspec.Source{RepoURL: "https://example.com/shop.git", Path: tt.path, Kustomize: tt.opts}
			req := SingleSource("guestbook", "default", src, "0123456789abcdef0123456789abcdef01234567")

			copyRoot := filepath.Join(t.TempDir(), "repo")
			if err := copyTree(fixture, copyRoot); err != nil {
				t.Fatal(err)
			}
			if tt.opts != nil {
				argoEdit(t, kbin, filepath.Join(copyRoot, tt.path), *tt.opts, map[string]string{"ARGOCD_APP_NAME": "guestbook", "ARGOCD_APP_REVISION": req.Sources[0].SHA})
			}
			want := runRef(t, copyRoot, kbin, "build", tt.path)

			dir, err := appDir(fixture, tt.path)
			if err != nil {
				t.Fatal(err)
			}
			opts := appspec.Kustomize{}
			if tt.opts != nil {
				opts = *tt.opts
			}
			m, err := (&Renderer{}).kustomizeBuild(t.Context(), toolInput{Root: fixture, Dir: dir, Source: req.Sources[0], AppName: req.AppName, Namespace: req.Namespace}, opts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.AsYaml()
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(string(want), string(got)); d != "" {
				t.Fatalf("kustomize build output (-kustomize CLI +ours):\n%s", d)
			}

			objs, err := renderVia(t, fixture, nil, req)
			if err != nil {
				t.Fatal(err)
			}
			if d := diffObjects(parseRef(t, "kustomize build", want), objs); d != "" {
				t.Fatalf("rendered objects (-kustomize CLI +ours):\n%s", d)
			}
			if after := treeDigest(t, fixture); after != before {
				t.Fatal("the render modified the checkout")
			}
		})
	}
}

func TestKustomizeErrors(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{
		"kustomization.yaml": "resources: [cm.yaml]\n",
		"cm.yaml":            cm("secret-from-outside"),
	})
	writeFiles(t, root, map[string]string{
		"a/b/c/traversal/kustomization.yaml": "resources: [\"../../../../" + strings.Repeat("../", 8) + filepath.ToSlash(outside)[1:] + "\"]\n",
		"dirlink/kustomization.yaml":         "resources: [linked]\n",
		"filelink/kustomization.yaml":        "resources: [cm.yaml]\n",
		"dangling/kustomization.yaml":        "resources: [cm.yaml]\n",
		"remote/kustomization.yaml":          "resources:\n- https://github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v5.0.0\n",
		"github/kustomization.yaml":          "resources:\n- github.com/kubernetes-sigs/kustomize/examples/helloWorld\n",
		"scp/kustomization.yaml":             "resources:\n- git@github.com:kubernetes-sigs/kustomize.git//examples/helloWorld\n",
		"nested/kustomization.yaml":          "resources: [../remote]\n",
		"httpfile/kustomization.yaml":        "patches:\n- path: https://example.com/patch.yaml\n",
		"fileurl/kustomization.yaml":         "resources: [\"file:///etc/kustomize\"]\n",
		"plain/kustomization.yaml":           "commonLabels: {env: dev}\nresources: [cm.yaml]\n",
		"plain/cm.yaml":                      cm("plain"),
		"nokust/cm.yaml":                     cm("x"),
	})
	for link, target := range map[string]string{"dirlink/linked": outside, "filelink/cm.yaml": filepath.Join(outside, "cm.yaml"),
		"dangling/cm.yaml": filepath.Join(outside, "missing", "cm.yaml")} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, path string
		opts       appspec.Kustomize
		err        error
		contains   string
	}{
		{name: "traversal", path: "a/b/c/traversal", err: ErrBadPath, contains: "outside the repository"},
		{name: "symlinked base out of the repo", path: "dirlink", err: ErrBadPath, contains: "outside the repository"},
		{name: "symlinked file out of the repo", path: "filelink", err: ErrBadPath, contains: "outside the repository"},
		{name: "dangling symlink out of the repo", path: "dangling", err: ErrBadPath, contains: "outside the repository"},
		{name: "remote base", path: "remote", err: ErrRemoteBase, contains: "allowRemoteBases"},
		{name: "github shorthand", path: "github", err: ErrRemoteBase},
		{name: "scp-like git URL", path: "scp", err: ErrRemoteBase},
		{name: "remote base in a local base", path: "nested", err: ErrRemoteBase, contains: "remote/kustomization.yaml"},
		{name: "remote patch file", path: "httpfile", err: ErrRemoteBase},
		{name: "file URL even when remote bases are allowed", path: "fileurl", opts: appspec.Kustomize{AllowRemoteBases: true}, err: ErrBadPath, contains: "file://"},
		{name: "label conflict without force", path: "plain", opts: appspec.Kustomize{CommonLabels: map[string]string{"env": "prod"}}, err: ErrKustomize, contains: "label env is already"},
		{name: "missing component", path: "plain", opts: appspec.Kustomize{Components: []string{"../nope"}}, err: ErrKustomize, contains: "not found"},
		{name: "component out of the repo", path: "plain", opts: appspec.Kustomize{Components: []string{"../../../../../../../../../.." + outside}}, err: ErrBadPath},
		{name: "bad image", path: "plain", opts: appspec.Kustomize{Images: []string{"nginx"}}, err: ErrKustomize, contains: "image override"},
		{name: "bad patch option", path: "plain", opts: appspec.Kustomize{Patches: []appspec.KustomizePatch{{Patch: "{}", Options: map[string]bool{"nope": true}}}}, err: ErrKustomize},
		{name: "overrides without a kustomization", path: "nokust", opts: appspec.Kustomize{NamePrefix: "x-"}, err: ErrKustomize, contains: "kustomization file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			src := appspec.Source{RepoURL: "https://example.com/r.git", Path: tt.path, Kustomize: &opts}
			_, err := renderVia(t, root, nil, SingleSource("app", "default", src, "sha"))
			wantError(t, err, tt.err, tt.contains, "secret-from-outside")
		})
	}
	t.Run("ignore missing components", func(t *testing.T) {
		opts := appspec.Kustomize{Components: []string{"../nope"}, IgnoreMissingComponents: true}
		src := appspec.Source{RepoURL: "https://example.com/r.git", Path: "plain", Kustomize: &opts}
		objs, err := renderVia(t, root, nil, SingleSource("app", "default", src, "sha"))
		if err != nil || len(objs) != 1 {
			t.Fatalf("render = %d objects, %v; want 1, nil", len(objs), err)
		}
	})
}

func TestKustomizeParseImage(t *testing.T) {
	tests := []struct {
		in   string
		want string // name newName newTag digest
	}{
		{"nginx:1.2", "nginx  1.2 "},
		{"nginx@sha256:ab", "nginx   sha256:ab"},
		{"nginx=my/nginx", "nginx my/nginx  "},
		{"nginx=my/nginx:2", "nginx my/nginx 2 "},
		{"nginx=my/nginx:2@sha256:ab", "nginx my/nginx 2 sha256:ab"},
		{"nginx=*:3", "nginx * 3 "},
		{"reg:5000/app=reg:5000/app:4", "reg:5000/app reg:5000/app 4 "},
		{"nginx", "error"},
	}
	for _, tt := range tests {
		img, err := parseImage(tt.in)
		got := strings.Join([]string{img.Name, img.NewName, img.NewTag, img.Digest}, " ")
		if err != nil {
			got = "error"
		}
		if got != tt.want {
			t.Errorf("parseImage(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestKustomizeIsRemoteRef(t *testing.T) {
	for ref, want := range map[string]bool{
		"../base": false, "base": false, "github.com.yaml": false, "a@b.yaml": false,
		"https://example.com/x.yaml": true, "git::https://example.com/r.git": true, "ssh://git@example.com/r.git": true,
		"github.com/org/repo": true, "GitHub.com/org/repo": true, "git@gitlab.com:org/repo.git": true, "file:///tmp/r": true,
	} {
		if got := isRemoteRef(ref); got != want {
			t.Errorf("isRemoteRef(%q) = %v, want %v", ref, got, want)
		}
	}
}

// sortedNames lists kind/name of objects, sorted.
func sortedNames(objs []*unstructured.Unstructured) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.GetKind() + "/" + o.GetName()
	}
	sort.Strings(out)
	return out
}

// wantError checks that err wraps want (any error when want is nil),
// mentions contains and none of leaks.
func wantError(t *testing.T, err, want error, contains string, leaks ...string) {
	t.Helper()
	t.Log(err)
	if err == nil || (want != nil && !errors.Is(err, want)) {
		t.Fatalf("error = %v, want %v", err, want)
	}
	if !strings.Contains(err.Error(), contains) {
		t.Fatalf("error %q does not mention %q", err, contains)
	}
	for _, l := range leaks {
		if strings.Contains(err.Error(), l) {
			t.Fatalf("error leaks %q: %v", l, err)
		}
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestKustomizeOpenAPIReset checks that a kustomization with its own
// OpenAPI schema does not leave it behind for the next build (kustomize
// keeps it in a global).
func TestKustomizeOpenAPIReset(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"custom/kustomization.yaml": "openapi: {path: schema.json}\nresources: [cm.yaml]\n",
		"custom/schema.json":        `{"definitions": {}}`,
		"custom/cm.yaml":            cm("custom"),
	})
	src := appspec.Source{RepoURL: "https://example.com/r.git", Path: "custom", Kustomize: &appspec.Kustomize{}}
	if _, err := renderVia(t, root, nil, SingleSource("app", "default", src, "sha")); err != nil {
		t.Fatal(err)
	}
	if v := openapi.GetSchemaVersion(); strings.Contains(v, "custom") {
		t.Fatalf("schema after the build = %q, want the default", v)
	}
}

// A checkout under a relative cache dir (windlass dev's default data dir
// is relative) renders: the repository root is made absolute first.
func TestKustomizeRelativeRoot(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"repo/base/kustomization.yaml":    "resources: [cm.yaml]\n",
		"repo/base/cm.yaml":               cm("base"),
		"repo/overlay/kustomization.yaml": "resources: [../base]\nnamePrefix: dev-\n",
	})
	t.Chdir(dir)
	src := appspec.Source{RepoURL: "https://example.com/r.git", Path: "overlay", Kustomize: &appspec.Kustomize{}}
	objs, err := renderVia(t, "repo", nil, SingleSource("app", "default", src, "sha"))
	if err != nil {
		t.Fatalf("render from a relative root: %v", err)
	}
	if len(objs) != 1 || objs[0].GetName() != "dev-base" {
		t.Fatalf("render = %v; want the ConfigMap dev-base", objs)
	}
}
