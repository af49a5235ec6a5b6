package render

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp/cmpopts"
	"helm.sh/helm/v4/pkg/chart/common"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// The golden files are regenerated with `go test -run Helm -update`. The
// flag is defined only if another test file has not defined it already.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files in testdata")
	}
}

func helmUpdateGolden() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// helmTestdata is the absolute path of testdata/helm: the "checkout" of the
// golden tests.
func helmTestdata(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "helm"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runHelmCLI runs the reference helm with its homes in a temporary
// directory and no cluster, and returns its standard output.
func runHelmCLI(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	home := t.TempDir()
	if args[0] == "template" && !slices.Contains(args, "--kube-version") {
		// Helm's library defaults to Kubernetes v1.20.0 in test binaries
		// (testing.Testing()), and to client-go's minor version (v1.37.0,
		// as the CLI does) elsewhere: give the CLI the test default.
		args = append(args, "--kube-version", common.DefaultCapabilities.KubeVersion.Version)
	}
	cmd := exec.CommandContext(t.Context(), refTool(t, "helm"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECONFIG="+filepath.Join(home, "no-kubeconfig"),
	)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// helmCanon is the comparable form of rendered objects: sorted by kind,
// namespace and name, each marshalled with the same encoder.
func helmCanon(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	sorted := slices.Clone(objs)
	slices.SortStableFunc(sorted, func(a, b *unstructured.Unstructured) int {
		return cmp.Or(cmp.Compare(a.GetKind(), b.GetKind()), cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	var b strings.Builder
	for _, o := range sorted {
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.String()
}

// helmCLICanon parses the CLI's output the same way.
func helmCLICanon(t *testing.T, out []byte) string {
	t.Helper()
	objs, err := manifest.Parse("helm template", out)
	if err != nil {
		t.Fatal(err)
	}
	return helmCanon(t, objs)
}

// helmWriteTemp writes content to a file of a temporary directory.
func helmWriteTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// helmCopyDir copies a directory tree (regular files and directories).
func helmCopyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// helmCase is one render compared against the reference CLI.
type helmCase struct {
	name string
	// path is the chart's directory below testdata/helm.
	path      string
	app, ns   string
	helm      *appspec.Helm
	refs      map[string]string
	cliRel    string
	cliArgs   []string
	depsBuild bool // run `helm dependency build` on a copy for the CLI
}

func helmCases(t *testing.T) []helmCase {
	td := helmTestdata(t)
	webapp := filepath.Join(td, "webapp")
	inline := "config:\n  fromInline: yes\n  nested:\n    override: inline\n"
	object := map[string]any{"replicaCount": 4, "sub": map[string]any{"enabled": false}, "config": map[string]any{"list": []any{"obj"}}}
	objectYAML, err := yaml.Marshal(object)
	if err != nil {
		t.Fatal(err)
	}
	return []helmCase{
		{
			name: "defaults", path: "webapp", app: "shop", ns: "store",
			cliRel: "shop", cliArgs: []string{"-n", "store", "--include-crds"},
		},
		{
			name: "no namespace anywhere", path: "webapp", app: "shop",
			cliRel: "shop", cliArgs: []string{"--include-crds"},
		},
		{
			name: "values files, inline values, parameters and capabilities", path: "webapp", app: "shop", ns: "store",
			helm: &appspec.Helm{
				ValueFiles: []string{"values-prod.yaml", "values-extra.yaml"},
				Values:     inline,
				Parameters: []appspec.HelmParameter{
					{Name: "image.tag", Value: "2.0"},
					{Name: "config.list", Value: "{p,q}"},
					{Name: "config.csv", Value: "a,b,c"},
					{Name: "config.port", Value: "8080", ForceString: true},
					{Name: "config.flag", Value: "true"},
					{Name: "extraEnv.LEVEL", Value: "debug"},
				},
				FileParameters: []appspec.HelmFileParameter{{Name: "banner", Path: "files/banner.txt"}},
				KubeVersion:    "1.29.3",
				APIVersions:    []string{"example.com/v1"},
			},
			cliRel: "shop",
			cliArgs: []string{"-n", "store", "--include-crds",
				"-f", filepath.Join(webapp, "values-prod.yaml"), "-f", filepath.Join(webapp, "values-extra.yaml"),
				"-f", helmWriteTemp(t, "inline.yaml", inline),
				"--set", "image.tag=2.0", "--set", "config.list={p,q}", "--set", `config.csv=a\,b\,c`,
				"--set", "config.flag=true", "--set", "extraEnv.LEVEL=debug", "--set-string", "config.port=8080",
				"--set-file", "banner=" + filepath.Join(webapp, "files", "banner.txt"),
				"--kube-version", "1.29.3", "--api-versions", "example.com/v1"},
		},
		{
			name: "valuesObject replaces values and disables the subchart", path: "webapp", app: "shop", ns: "store",
			helm:   &appspec.Helm{Values: "replicaCount: 9\n", ValuesObject: object},
			cliRel: "shop", cliArgs: []string{"-n", "store", "--include-crds", "-f", helmWriteTemp(t, "object.yaml", string(objectYAML))},
		},
		{
			name: "release name and namespace from the helm options", path: "webapp", app: "shop", ns: "store",
			helm:   &appspec.Helm{ReleaseName: "custom", Namespace: "other"},
			cliRel: "custom", cliArgs: []string{"-n", "other", "--include-crds"},
		},
		{
			name: "missing value files ignored", path: "webapp", app: "shop", ns: "store",
			helm:   &appspec.Helm{ValueFiles: []string{"values-prod.yaml", "missing.yaml", "$env/missing.yaml"}, IgnoreMissingValueFiles: true},
			refs:   map[string]string{"env": filepath.Join(td, "envrepo")},
			cliRel: "shop", cliArgs: []string{"-n", "store", "--include-crds", "-f", filepath.Join(webapp, "values-prod.yaml")},
		},
		{
			name: "multi-source $ref value files and file parameters", path: "webapp", app: "shop", ns: "store",
			helm: &appspec.Helm{
				ValueFiles:     []string{"values-prod.yaml", "$values/envs/prod/values.yaml"},
				FileParameters: []appspec.HelmFileParameter{{Name: "banner", Path: "$values/envs/prod/banner.txt"}},
			},
			refs:   map[string]string{"values": filepath.Join(td, "envrepo")},
			cliRel: "shop",
			cliArgs: []string{"-n", "store", "--include-crds",
				"-f", filepath.Join(webapp, "values-prod.yaml"), "-f", filepath.Join(td, "envrepo", "envs", "prod", "values.yaml"),
				"--set-file", "banner=" + filepath.Join(td, "envrepo", "envs", "prod", "banner.txt")},
		},
		{
			name: "dotted application name", path: "webapp", app: "example.shop", ns: "store",
			cliRel: "example.shop", cliArgs: []string{"-n", "store", "--include-crds"},
		},
		{
			name: "hooks and CRDs", path: "hooks", app: "rel", ns: "ns1",
			cliRel: "rel", cliArgs: []string{"-n", "ns1", "--include-crds"},
		},
		{
			name: "skipCrds and skipTests", path: "hooks", app: "rel", ns: "ns1",
			helm:   &appspec.Helm{SkipCrds: true, SkipTests: true},
			cliRel: "rel", cliArgs: []string{"-n", "ns1", "--skip-tests"},
		},
		{
			name: "skipSchemaValidation renders values the schema refuses", path: "schema", app: "rel", ns: "ns1",
			helm:   &appspec.Helm{SkipSchemaValidation: true},
			cliRel: "rel", cliArgs: []string{"-n", "ns1", "--include-crds", "--skip-schema-validation"},
		},
		{
			name: "file:// dependencies with an alias", path: "filedep/app", app: "dep", ns: "ns2",
			cliRel: "dep", cliArgs: []string{"-n", "ns2", "--include-crds"}, depsBuild: true,
		},
	}
}

// TestHelmMatchesCLI renders each case in process and with the reference
// helm CLI, and compares the sorted objects byte for byte.
func TestHelmMatchesCLI(t *testing.T) {
	td := helmTestdata(t)
	r := &Renderer{cacheDir: t.TempDir()}
	for _, tc := range helmCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			got := helmCanon(t, helmRenderCase(t, r, td, tc))

			chartDir := filepath.Join(td, tc.path)
			if tc.depsBuild {
				tmp := t.TempDir()
				helmCopyDir(t, filepath.Dir(chartDir), tmp)
				chartDir = filepath.Join(tmp, filepath.Base(chartDir))
				runHelmCLI(t, chartDir, "dependency", "build", chartDir)
			}
			args := append([]string{"template", tc.cliRel, chartDir}, tc.cliArgs...)
			want := helmCLICanon(t, runHelmCLI(t, td, args...))
			if d := gocmp.Diff(want, got); d != "" {
				t.Fatalf("render differs from helm template (-cli +ours):\n%s", d)
			}
		})
	}
}

func helmRenderCase(t *testing.T, r *Renderer, td string, tc helmCase) []*unstructured.Unstructured {
	t.Helper()
	dir, err := appDir(td, tc.path)
	if err != nil {
		t.Fatal(err)
	}
	in := toolInput{Root: td, Dir: dir, AppName: tc.app, Namespace: tc.ns, Refs: tc.refs,
		Source: SourceRequest{Source: appspec.Source{Path: tc.path, Helm: tc.helm}}}
	objs, err := r.renderHelm(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestHelmGoldenFiles keeps the rendered output of some cases in
// testdata/helm/*.golden (regenerate with -update), so that a change shows
// up in review.
func TestHelmGoldenFiles(t *testing.T) {
	td := helmTestdata(t)
	r := &Renderer{cacheDir: t.TempDir()}
	golden := map[string]string{
		"hooks and CRDs": "hooks.golden",
		"multi-source $ref value files and file parameters": "webapp-multisource.golden",
	}
	for _, tc := range helmCases(t) {
		file, ok := golden[tc.name]
		if !ok {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			got := helmCanon(t, helmRenderCase(t, r, td, tc))
			p := filepath.Join(td, file)
			if helmUpdateGolden() {
				if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(p)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if d := gocmp.Diff(string(want), got); d != "" {
				t.Fatalf("%s differs (-want +got):\n%s", file, d)
			}
		})
	}
}

// TestHelmOutputOrder checks the order helm template prints: CRDs, then
// the manifests in install order, then the hooks, which keep their
// annotations.
func TestHelmOutputOrder(t *testing.T) {
	td := helmTestdata(t)
	tc := helmCase{path: "hooks", app: "rel", ns: "ns1"}
	objs := helmRenderCase(t, &Renderer{}, td, tc)
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+"/"+o.GetName())
	}
	want := []string{
		"CustomResourceDefinition/crontabs.stable.example.com",
		"CustomResourceDefinition/widgets.stable.example.com",
		"CustomResourceDefinition/gadgets.stable.example.com",
		"Deployment/rel-app",
		"CronTab/rel-schedule",
		"Secret/rel-pre-secret",
		"ConfigMap/rel-post",
		"Pod/rel-test-connection",
		"Job/rel-migrate",
	}
	if d := gocmp.Diff(want, got); d != "" {
		t.Fatalf("order (-want +got):\n%s", d)
	}
	job := objs[len(objs)-1]
	wantAnn := map[string]string{
		"helm.sh/hook":               "pre-install,pre-upgrade",
		"helm.sh/hook-weight":        "-5",
		"helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded",
	}
	if d := gocmp.Diff(wantAnn, job.GetAnnotations()); d != "" {
		t.Fatalf("hook annotations (-want +got):\n%s", d)
	}
}

// helmBomb is a small YAML document whose aliases of one long string
// expand it ~150 times: under go-yaml's own alias limit (which counts
// nodes, not bytes), over ours.
func helmBomb(key string) string {
	return key + ":\n  s: &s \"" + strings.Repeat("x", 2000) + "\"\n  l: [" + strings.TrimSuffix(strings.Repeat("*s, ", 300), ", ") + "]\n"
}

// helmLaughs is the classic billion laughs, which go-yaml itself refuses.
func helmLaughs() string {
	var b strings.Builder
	b.WriteString("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 9), ", "))
	}
	return b.String()
}

const helmOKChart = "apiVersion: v2\nname: ok\nversion: 0.1.0\n"

// TestHelmErrors covers paths that leave the checkout, missing files,
// broken charts and values that Helm cannot take.
func TestHelmErrors(t *testing.T) {
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret.yaml": "stolen: true\n"})
	cmTemplate := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
	tests := []struct {
		name  string
		files map[string]string
		links map[string]string // link (in the checkout) -> target
		path  string
		helm  *appspec.Helm
		refs  map[string]string
		err   error
		text  []string // substrings the error must contain
	}{
		{name: "value file traversal", helm: &appspec.Helm{ValueFiles: []string{"../../etc/passwd"}}, err: ErrBadPath, text: []string{"leaves the repository"}},
		{name: "absolute value file", helm: &appspec.Helm{ValueFiles: []string{"/etc/passwd"}}, err: ErrBadPath},
		{name: "value file through a symlink out", links: map[string]string{"chart/evil.yaml": filepath.Join(outside, "secret.yaml")},
			helm: &appspec.Helm{ValueFiles: []string{"evil.yaml"}}, err: ErrBadPath, text: []string{`"chart/evil.yaml" leads out of the repository`}},
		{name: "value file through a symlink out of the chart dir", links: map[string]string{"other/evil.yaml": filepath.Join(outside, "secret.yaml")},
			helm: &appspec.Helm{ValueFiles: []string{"../other/evil.yaml"}}, err: ErrBadPath, text: []string{`"../other/evil.yaml"`, `"other/evil.yaml" leads out of the repository`}},
		{name: "remote value file", helm: &appspec.Helm{ValueFiles: []string{"https://example.com/values.yaml"}}, err: ErrBadPath},
		{name: "unknown ref", helm: &appspec.Helm{ValueFiles: []string{"$nope/values.yaml"}}, err: ErrBadPath, text: []string{`no source has ref "nope"`}},
		{name: "ref traversal", refs: map[string]string{"values": outside}, helm: &appspec.Helm{ValueFiles: []string{"$values/../x.yaml"}}, err: ErrBadPath},
		{name: "missing value file", helm: &appspec.Helm{ValueFiles: []string{"missing.yaml"}}, err: ErrPathNotFound, text: []string{"missing.yaml"}},
		{name: "file parameter traversal", helm: &appspec.Helm{FileParameters: []appspec.HelmFileParameter{{Name: "x", Path: "../../../etc/hostname"}}}, err: ErrBadPath},
		{name: "value file is a directory", files: map[string]string{"chart/dir/x": ""}, helm: &appspec.Helm{ValueFiles: []string{"dir"}}, err: ErrBadPath},
		{name: "YAML bomb in a value file", files: map[string]string{"chart/bomb.yaml": helmBomb("bomb")},
			helm: &appspec.Helm{ValueFiles: []string{"bomb.yaml"}}, err: ErrHelmValues, text: []string{"alias bomb"}},
		{name: "billion laughs in a value file", files: map[string]string{"chart/laughs.yaml": helmLaughs()},
			helm: &appspec.Helm{ValueFiles: []string{"laughs.yaml"}}, err: ErrHelmValues, text: []string{"alias"}},
		{name: "YAML bomb in inline values", helm: &appspec.Helm{Values: helmBomb("bomb")}, err: ErrHelmValues, text: []string{"alias bomb"}},
		{name: "YAML bomb in the chart's values.yaml", files: map[string]string{"chart/values.yaml": helmBomb("bomb")}, err: ErrChart, text: []string{"alias bomb"}},
		{name: "invalid values file", files: map[string]string{"chart/bad.yaml": "a: [\n"}, helm: &appspec.Helm{ValueFiles: []string{"bad.yaml"}}, err: ErrHelmValues, text: []string{"bad.yaml"}},
		{name: "bad parameter", helm: &appspec.Helm{Parameters: []appspec.HelmParameter{{Name: "a[b]", Value: "1"}}}, err: ErrHelmValues},
		{name: "bad kubeVersion", helm: &appspec.Helm{KubeVersion: "not-a-version"}, err: ErrHelmValues},
		{name: "values break values.schema.json", files: map[string]string{
			"chart/values.schema.json": `{"type": "object", "properties": {"replicas": {"type": "integer"}}}`,
			"chart/values.yaml":        "replicas: three\n"},
			err: ErrChart, text: []string{"schema", "/replicas"}},
		{name: "undefined template function", files: map[string]string{"chart/templates/cm.yaml": cmTemplate + "data:\n  x: {{ .Values.x | nosuchfunc }}\n"},
			err: ErrChart, text: []string{"templates/cm.yaml:6", `function "nosuchfunc" not defined`}},
		{name: "nil pointer in a template", files: map[string]string{"chart/templates/cm.yaml": cmTemplate + "data:\n  x: {{ .Values.missing.deeper.key }}\n"},
			err: ErrChart, text: []string{"templates/cm.yaml:6", "nil pointer"}},
		{name: "template fails with required", files: map[string]string{"chart/templates/cm.yaml": cmTemplate + "data:\n  x: {{ required \"x is required\" .Values.x }}\n"},
			err: ErrChart, text: []string{"templates/cm.yaml", "x is required"}},
		{name: "malformed Chart.yaml", files: map[string]string{"chart/Chart.yaml": "apiVersion: v2\nname: [broken\n"}, err: ErrChart},
		{name: "Chart.yaml without a version", files: map[string]string{"chart/Chart.yaml": "apiVersion: v2\nname: ok\n"}, err: ErrChart},
		{name: "library chart", files: map[string]string{"chart/Chart.yaml": helmOKChart + "type: library\n"}, err: ErrChart, text: []string{"library charts are not installable"}},
		{name: "kubeVersion constraint not met", files: map[string]string{"chart/Chart.yaml": helmOKChart + "kubeVersion: \"<1.20.0\"\n"}, err: ErrChart, text: []string{"kubeVersion"}},
		{name: "dependency missing without repository", files: map[string]string{"chart/Chart.yaml": helmOKChart + "dependencies:\n  - name: gone\n    version: 1.0.0\n"},
			err: ErrChart, text: []string{"gone", "missing in charts/"}},
		{name: "file:// dependency leaves the checkout", files: map[string]string{"chart/Chart.yaml": helmOKChart + "dependencies:\n  - name: lib\n    version: 1.0.0\n    repository: file://" + outside + "\n"},
			err: ErrBadPath, text: []string{"leaves the repository"}},
		{name: "file:// dependency version mismatch", files: map[string]string{
			"chart/Chart.yaml": helmOKChart + "dependencies:\n  - name: lib\n    version: ^2.0.0\n    repository: file://../lib\n",
			"lib/Chart.yaml":   "apiVersion: v2\nname: lib\nversion: 1.0.0\n"},
			err: ErrChart, text: []string{"does not match"}},
		{name: "named repository", files: map[string]string{"chart/Chart.yaml": helmOKChart + "dependencies:\n  - name: lib\n    version: 1.0.0\n    repository: \"@stable\"\n"},
			err: ErrChart, text: []string{"named repositories"}},
		{name: "symlink in the chart leaves the checkout", links: map[string]string{"chart/templates/evil.yaml": filepath.Join(outside, "secret.yaml")}, err: ErrBadPath},
		{name: "symlink loop in the chart", links: map[string]string{"chart/templates/loop": ".."}, err: ErrBadPath, text: []string{"loop"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			files := map[string]string{"chart/Chart.yaml": helmOKChart, "chart/templates/cm.yaml": cmTemplate}
			for k, v := range tt.files {
				files[k] = v
			}
			writeFiles(t, root, files)
			for link, target := range tt.links {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(root, link)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
					t.Fatal(err)
				}
			}
			dir, err := appDir(root, "chart")
			if err != nil {
				t.Fatal(err)
			}
			in := toolInput{Root: root, Dir: dir, AppName: "app", Namespace: "ns", Refs: tt.refs,
				Source: SourceRequest{Source: appspec.Source{Path: "chart", Helm: tt.helm}}}
			_, err = (&Renderer{cacheDir: t.TempDir()}).renderHelm(t.Context(), in)
			if !errors.Is(err, tt.err) {
				t.Fatalf("renderHelm() error = %v, want %v", err, tt.err)
			}
			if failure.TypeOf(err) == "" {
				t.Fatalf("error %v is not permanent", err)
			}
			t.Logf("error: %v", err)
			for _, s := range tt.text {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
}

// TestHelmEscapeSetValue mirrors what Argo CD does to --set values.
func TestHelmEscapeSetValue(t *testing.T) {
	for in, want := range map[string]string{
		"plain": "plain", "a,b": `a\,b`, `a\,b`: `a\,b`, "{a,b}": "{a,b}", ",": `\,`, "": "",
	} {
		if got := helmEscapeSetValue(in); got != want {
			t.Errorf("helmEscapeSetValue(%q) = %q, want %q", in, got, want)
		}
	}
}

// helmCheckouter serves fixture directories by repository URL.
type helmCheckouter map[string]string

func (c helmCheckouter) Checkout(_ context.Context, repoURL, _ string) (string, error) {
	dir, ok := c[repoURL]
	if !ok {
		return "", fmt.Errorf("no fixture for %s", repoURL)
	}
	return dir, nil
}

// TestHelmRenderEndToEnd renders a multi-source application through
// Renderer.Render and Load, concurrently, and compares with the CLI.
func TestHelmRenderEndToEnd(t *testing.T) {
	td := helmTestdata(t)
	r, err := NewRenderer(Config{
		Store:    &MemoryStore{},
		Git:      helmCheckouter{"https://git.example.com/charts.git": td, "https://git.example.com/envs.git": filepath.Join(td, "envrepo")},
		CacheDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	req := Request{AppName: "shop", Namespace: "store", Sources: []SourceRequest{
		{Source: appspec.Source{RepoURL: "https://git.example.com/charts.git", Path: "webapp",
			Helm: &appspec.Helm{ValueFiles: []string{"$values/envs/prod/values.yaml"}}}, SHA: "c1"},
		{Source: appspec.Source{RepoURL: "https://git.example.com/envs.git", Ref: "values"}, SHA: "e1"},
		{Source: appspec.Source{RepoURL: "https://git.example.com/charts.git", Path: "hooks"}, SHA: "c1"},
	}}
	want := helmCLICanon(t, append(
		runHelmCLI(t, td, "template", "shop", filepath.Join(td, "webapp"), "-n", "store", "--include-crds",
			"-f", filepath.Join(td, "envrepo", "envs", "prod", "values.yaml")),
		runHelmCLI(t, td, "template", "shop", filepath.Join(td, "hooks"), "-n", "store", "--include-crds")...))

	// Concurrent renders share nothing in Helm.
	var wg sync.WaitGroup
	refs := make([]ManifestRef, 4)
	errs := make([]error, 4)
	for i := range refs {
		wg.Go(func() { refs[i], errs[i] = r.Render(t.Context(), req, true) })
	}
	wg.Wait()
	for i := range refs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if d := gocmp.Diff(refs[0], refs[i], cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("concurrent renders differ (-first +other):\n%s", d)
		}
	}
	objs, err := r.Load(t.Context(), refs[0])
	if err != nil {
		t.Fatal(err)
	}
	if d := gocmp.Diff(want, helmCanon(t, objs)); d != "" {
		t.Fatalf("render differs from helm template (-cli +ours):\n%s", d)
	}
	if refs[0].Count != len(objs) || refs[0].SHA != "c1" {
		t.Fatalf("ref = %+v, want %d objects at c1", refs[0], len(objs))
	}
}

// TestHelmLongAppName checks that an application name longer than Helm
// allows in a release name (it may have 253 characters) fails with the
// fix, unless helm.releaseName is set.
func TestHelmLongAppName(t *testing.T) {
	td := helmTestdata(t)
	r := &Renderer{cacheDir: t.TempDir()}
	long := "example." + strings.Repeat("x", 46) // 54 characters
	tc := helmCase{path: "webapp", app: long, ns: "store"}
	dir, err := appDir(td, tc.path)
	if err != nil {
		t.Fatal(err)
	}
	in := toolInput{Root: td, Dir: dir, AppName: long, Namespace: "store", Source: SourceRequest{Source: appspec.Source{Path: tc.path}}}
	if _, err := r.renderHelm(t.Context(), in); !errors.Is(err, ErrChart) || !strings.Contains(err.Error(), "set helm.releaseName") {
		t.Fatalf("render = %v, want a chart error that asks for helm.releaseName", err)
	}
	tc.helm = &appspec.Helm{ReleaseName: "shop"}
	if objs := helmRenderCase(t, r, td, tc); len(objs) == 0 {
		t.Fatal("render with helm.releaseName: no objects")
	}
}
