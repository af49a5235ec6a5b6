package render

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/settings"
)

// refKustomizeHelm runs the reference `kustomize build --enable-helm`
// with the reference helm binary on a copy of dir's tree.
func refKustomizeHelm(t *testing.T, root, path string, extra ...string) []byte {
	t.Helper()
	// Not t.TempDir: kustomize passes paths to helm in ways that break
	// on the commas of test names.
	tmp, err := os.MkdirTemp("", "kustomize-helm-ref-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	cp := filepath.Join(tmp, "repo")
	if err := copyTree(root, cp); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"build", "--enable-helm", "--helm-command", refTool(t, "helm")}, extra...)
	return runRef(t, cp, refTool(t, "kustomize"), append(args, path)...)
}

// buildKustomizeHelm builds path of root in process with options o.
func buildKustomizeHelm(t *testing.T, r *Renderer, root, path string) ([]byte, error) {
	t.Helper()
	dir, err := appDir(root, path)
	if err != nil {
		t.Fatal(err)
	}
	src := SourceRequest{Source: appspec.Source{RepoURL: "https://example.com/shop.git", Path: path}, SHA: strings.Repeat("ab", 20)}
	m, err := r.kustomizeBuild(t.Context(), toolInput{Root: root, Dir: dir, Source: src, AppName: "shop", Namespace: "default"}, appspec.Kustomize{})
	if err != nil {
		return nil, err
	}
	return m.AsYaml()
}

// TestKustomizeHelmChartsGolden inflates helmCharts with the Helm SDK in
// process and compares the build byte for byte with the reference
// `kustomize build --enable-helm` running the helm CLI: a local chart
// with every values source, nested kustomizations, valuesMerge merge and
// skipHooks, a chart home outside the kustomization under
// LoadRestrictionsNone.
func TestKustomizeHelmChartsGolden(t *testing.T) {
	fixture, err := filepath.Abs("testdata/kustomize-helm")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, options string
	}{
		{name: "local chart, inline and extra values, namespace left alone", path: "app", options: "--enable-helm"},
		{name: "nested, merge, values file, no hooks", path: "merge", options: "--enable-helm"},
		{name: "chart home outside, no restrictor", path: "outside", options: "--enable-helm --load-restrictor LoadRestrictionsNone"},
		{name: "legacy reorder", path: "app", options: "--enable-helm --reorder legacy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := ParseKustomizeBuildOptions(tt.options)
			if err != nil {
				t.Fatal(err)
			}
			before := treeDigest(t, fixture)
			want := refKustomizeHelm(t, fixture, tt.path, strings.Fields(tt.options)[1:]...)
			got, err := buildKustomizeHelm(t, &Renderer{cacheDir: t.TempDir(), kustomize: o}, fixture, tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(string(want), string(got)); d != "" {
				t.Fatalf("kustomize build output (-kustomize CLI +ours):\n%s", d)
			}
			if after := treeDigest(t, fixture); after != before {
				t.Fatal("the build modified the checkout")
			}
		})
	}
}

// TestKustomizeHelmChartsPrivateRepo pulls a kustomization's chart from
// a Helm repository behind basic auth with the credential registered for
// it; the build matches the reference's, which pulls the same chart from
// an open copy of the repository. A wrong password is a permanent error
// that names no secret.
func TestKustomizeHelmChartsPrivateRepo(t *testing.T) {
	charts := helmChartsDir(t, "file://../dep")
	private := privateHelmRepo(t, charts, nil, false)
	writeHelmIndex(t, charts, private.URL)
	open := httptest.NewServer(http.FileServer(http.Dir(charts)))
	t.Cleanup(open.Close)
	openCharts := t.TempDir()
	copyDir(t, charts, openCharts)
	writeHelmIndex(t, openCharts, open.URL)
	open.Config.Handler = http.FileServer(http.Dir(openCharts))

	kust := func(repo string) string {
		root := t.TempDir()
		writeFiles(t, root, map[string]string{"app/kustomization.yaml": "helmCharts:\n- name: demo\n  version: 1.0.0\n  repo: " + repo +
			"\n  releaseName: rel\n  namespace: ns\n  valuesInline:\n    extra: yes\n"})
		return root
	}
	want := refKustomizeHelm(t, kust(open.URL), "app")
	root := kust(private.URL)
	r := credsRenderer(t, []settings.Repository{{Type: settings.RepoTypeHelm, URL: private.URL, Username: helmUser, Password: helmPassword}}, nil)
	r.kustomize = KustomizeOptions{EnableHelm: true}
	got, err := buildKustomizeHelm(t, r, root, "app")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Fatalf("kustomize build output (-kustomize CLI +ours):\n%s", d)
	}
	if _, err := os.Stat(filepath.Join(root, "app", "charts")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the pull wrote into the checkout: %v", err)
	}

	wrong := credsRenderer(t, []settings.Repository{{Type: settings.RepoTypeHelm, URL: private.URL, Username: helmUser, Password: "wrong-do-not-leak"}}, nil)
	wrong.kustomize = KustomizeOptions{EnableHelm: true}
	_, err = buildKustomizeHelm(t, wrong, root, "app")
	if !errors.Is(err, ErrChartRepo) || failure.TypeOf(err) == "" || strings.Contains(err.Error(), "do-not-leak") {
		t.Fatalf("wrong password: error = %v, want a permanent chart repository error without the secret", err)
	}
}

// TestKustomizeHelmChartsRefused: each refusal is a permanent error that
// says what to change.
func TestKustomizeHelmChartsRefused(t *testing.T) {
	fixture, err := filepath.Abs("testdata/kustomize-helm")
	if err != nil {
		t.Fatal(err)
	}
	noRepo := t.TempDir()
	writeFiles(t, noRepo, map[string]string{"app/kustomization.yaml": "helmCharts:\n- name: missing\n"})
	badMerge := t.TempDir()
	writeFiles(t, badMerge, map[string]string{"app/kustomization.yaml": "helmCharts:\n- name: x\n  valuesMerge: blend\n"})
	tests := []struct {
		name, root, path string
		o                KustomizeOptions
		want             error
		msg              string
	}{
		{name: "helm not enabled", root: fixture, path: "app", want: ErrKustomize, msg: "helmCharts need --enable-helm"},
		{name: "chart home outside the kustomization", root: fixture, path: "outside", o: KustomizeOptions{EnableHelm: true}, want: ErrBadPath,
			msg: "app/charts/hello/values.yaml is outside the kustomization's folder outside"},
		{name: "no chart and no repo", root: noRepo, path: "app", o: KustomizeOptions{EnableHelm: true}, want: ErrKustomize, msg: "no repo to pull from"},
		{name: "bad valuesMerge", root: badMerge, path: "app", o: KustomizeOptions{EnableHelm: true}, want: ErrKustomize, msg: `not "blend"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := buildKustomizeHelm(t, &Renderer{cacheDir: t.TempDir(), kustomize: tt.o}, tt.root, tt.path)
			if !errors.Is(err, tt.want) || failure.TypeOf(err) == "" || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error = %v; want a permanent %v saying %q", err, tt.want, tt.msg)
			}
		})
	}
}

func TestParseKustomizeBuildOptions(t *testing.T) {
	tests := []struct {
		in   string
		want KustomizeOptions
		err  string
	}{
		{in: ""},
		{in: "--enable-helm --load-restrictor LoadRestrictionsNone", want: KustomizeOptions{EnableHelm: true, LoadRestrictor: "LoadRestrictionsNone"}},
		{in: "--load_restrictor=LoadRestrictionsRootOnly --reorder=none", want: KustomizeOptions{LoadRestrictor: "LoadRestrictionsRootOnly", Reorder: "none"}},
		{in: "--enable-helm --helm-kube-version 1.30.0 --helm-api-versions a/v1 --helm-api-versions b/v1",
			want: KustomizeOptions{EnableHelm: true, HelmKubeVersion: "1.30.0", HelmAPIVersions: []string{"a/v1", "b/v1"}}},
		{in: "--enable-alpha-plugins", err: "--enable-alpha-plugins is not supported: plugins would run programs"},
		{in: "--enable-helm --helm-command /usr/bin/helm", err: "--helm-command is not supported: charts are inflated with the Helm SDK"},
		{in: "--load-restrictor Everything", err: `"Everything" is not LoadRestrictionsRootOnly or LoadRestrictionsNone`},
		{in: "--reorder", err: "--reorder needs a value"},
		{in: "--frobnicate", err: `"--frobnicate" is not supported`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseKustomizeBuildOptions(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v; want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Fatalf("(-want +got):\n%s", d)
			}
			if again, err := ParseKustomizeBuildOptions(got.String()); err != nil || cmp.Diff(got, again) != "" {
				t.Fatalf("String() = %q does not parse back: %v", got.String(), err)
			}
		})
	}
}
