package render

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// helmPackage writes a chart's files, packages it into outDir and returns
// the archive's path.
func helmPackage(t *testing.T, outDir string, files map[string]string) string {
	t.Helper()
	src := t.TempDir()
	writeFiles(t, src, files)
	ch, err := loader.LoadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	p, err := chartutil.Save(ch, outDir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func helmDemoChart(name, version string, extra map[string]string) map[string]string {
	files := map[string]string{
		"Chart.yaml":  fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\n", name, version),
		"values.yaml": "color: red\nsize: 1\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-{{ .Chart.Name }}\n" +
			"data:\n  version: {{ .Chart.Version | quote }}\n  color: {{ .Values.color | quote }}\n  size: {{ .Values.size | quote }}\n",
	}
	for k, v := range extra {
		files[k] = v
	}
	return files
}

// helmRepoServer is an HTTP chart repository that counts its requests.
type helmRepoServer struct {
	*httptest.Server
	dir  string
	mu   sync.Mutex
	hits map[string]int
}

func newHelmRepoServer(t *testing.T) *helmRepoServer {
	t.Helper()
	s := &helmRepoServer{dir: t.TempDir(), hits: map[string]int{}}
	files := http.FileServer(http.Dir(s.dir))
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *helmRepoServer) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// index writes index.yaml for the packaged charts, with edit applied.
func (s *helmRepoServer) index(t *testing.T, edit func(*repo.IndexFile)) {
	t.Helper()
	idx, err := repo.IndexDirectory(s.dir, s.URL)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(idx)
	}
	idx.SortEntries()
	if err := idx.WriteFile(filepath.Join(s.dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newHelmTestRepo serves demo 0.9.0, 1.0.0, 1.2.0 and 2.0.0-rc.1, dep
// 1.0.0 and 1.1.0, and parent 1.0.0, which depends on dep ~1.0.0 from the
// same repository without bundling it.
func newHelmTestRepo(t *testing.T) *helmRepoServer {
	t.Helper()
	s := newHelmRepoServer(t)
	for _, v := range []string{"0.9.0", "1.0.0", "1.2.0", "2.0.0-rc.1"} {
		helmPackage(t, s.dir, helmDemoChart("demo", v, nil))
	}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		helmPackage(t, s.dir, helmDemoChart("dep", v, nil))
	}
	helmPackage(t, s.dir, helmDemoChart("parent", "1.0.0", map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: parent\nversion: 1.0.0\ndependencies:\n  - name: dep\n    version: \"~1.0.0\"\n    repository: " + s.URL + "\n",
	}))
	s.index(t, nil)
	return s
}

func TestHelmResolveChartVersion(t *testing.T) {
	s := newHelmTestRepo(t)
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	r := &Renderer{cacheDir: t.TempDir()}
	tests := []struct {
		name, repo, chart, constraint string
		want                          string
		err                           error
		retryable                     bool
	}{
		{name: "exact", repo: s.URL, chart: "demo", constraint: "1.0.0", want: "1.0.0"},
		{name: "caret range", repo: s.URL, chart: "demo", constraint: "^1.0.0", want: "1.2.0"},
		{name: "tilde range", repo: s.URL, chart: "demo", constraint: "~1.0", want: "1.0.0"},
		{name: "empty is latest stable", repo: s.URL + "/", chart: "demo", want: "1.2.0"},
		{name: "star is latest stable", repo: s.URL, chart: "demo", constraint: "*", want: "1.2.0"},
		{name: "HEAD is latest stable", repo: s.URL, chart: "demo", constraint: "HEAD", want: "1.2.0"},
		{name: "pre-release when asked", repo: s.URL, chart: "demo", constraint: ">=2.0.0-0", want: "2.0.0-rc.1"},
		{name: "missing version", repo: s.URL, chart: "demo", constraint: "3.0.0", err: ErrChartNotFound},
		{name: "no match for range", repo: s.URL, chart: "demo", constraint: "^5", err: ErrChartNotFound},
		{name: "bad constraint", repo: s.URL, chart: "demo", constraint: "main", err: ErrChartNotFound},
		{name: "missing chart", repo: s.URL, chart: "nope", err: ErrChartNotFound},
		{name: "no repository there", repo: s.URL + "/missing", chart: "demo", err: ErrChartRepo},
		{name: "unsupported scheme", repo: "ftp://example.com", chart: "demo", err: ErrBadPath},
		{name: "unreachable repository", repo: down.URL, chart: "demo", retryable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.ResolveChartVersion(t.Context(), tt.repo, tt.chart, tt.constraint)
			switch {
			case tt.retryable:
				if err == nil || failure.TypeOf(err) != "" {
					t.Fatalf("ResolveChartVersion() error = %v, want a retryable error", err)
				}
			case tt.err != nil:
				if !errors.Is(err, tt.err) {
					t.Fatalf("ResolveChartVersion() error = %v, want %v", err, tt.err)
				}
			case err != nil:
				t.Fatal(err)
			case got != tt.want:
				t.Fatalf("ResolveChartVersion() = %q, want %q", got, tt.want)
			}
		})
	}

	// The activity carries the error type to Temporal.
	a, err := New(r)
	if err != nil {
		t.Fatal(err)
	}
	out, err := a.ResolveChart(t.Context(), ResolveChartInput{RepoURL: s.URL, Chart: "demo", Version: "^1"})
	if err != nil || out.Version != "1.2.0" {
		t.Fatalf("ResolveChart() = %+v, %v; want 1.2.0", out, err)
	}
	if _, err := a.ResolveChart(t.Context(), ResolveChartInput{RepoURL: s.URL, Chart: "demo", Version: "9.9.9"}); failure.TypeOf(err) != "ChartNotFound" {
		t.Fatalf("ResolveChart() error = %v, want type ChartNotFound", err)
	}
}

// TestHelmRepoChartMatchesCLI renders a chart from an HTTP repository with
// $ref value files through Renderer.Render, compares it with `helm template
// --repo`, and checks that a second render uses the chart cache.
func TestHelmRepoChartMatchesCLI(t *testing.T) {
	s := newHelmTestRepo(t)
	td := helmTestdata(t)
	envs := t.TempDir()
	writeFiles(t, envs, map[string]string{"demo/values.yaml": "color: blue\n"})
	r, err := NewRenderer(Config{Store: &MemoryStore{}, Git: helmCheckouter{"https://git.example.com/envs.git": envs}, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	req := Request{AppName: "rel", Namespace: "ns", Sources: []SourceRequest{
		{Source: appspec.Source{RepoURL: s.URL, Chart: "demo", TargetRevision: "^1.0.0", Helm: &appspec.Helm{
			ValueFiles: []string{"$envs/demo/values.yaml"},
			Parameters: []appspec.HelmParameter{{Name: "size", Value: "3"}},
		}}, SHA: "1.2.0"},
		{Source: appspec.Source{RepoURL: "https://git.example.com/envs.git", Ref: "envs"}, SHA: "e1"},
	}}
	want := helmCLICanon(t, runHelmCLI(t, td, "template", "rel", "demo", "--repo", s.URL, "--version", "1.2.0",
		"-n", "ns", "--include-crds", "-f", filepath.Join(envs, "demo", "values.yaml"), "--set", "size=3"))
	// The CLI used the server too: count from here.
	tgz, index := s.count("/demo-1.2.0.tgz"), s.count("/index.yaml")
	for i := range 2 {
		ref, err := r.Render(t.Context(), req, true)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := r.Load(t.Context(), ref)
		if err != nil {
			t.Fatal(err)
		}
		if d := gocmp.Diff(want, helmCanon(t, objs)); d != "" {
			t.Fatalf("render %d differs from helm template (-cli +ours):\n%s", i, d)
		}
	}
	if n := s.count("/demo-1.2.0.tgz") - tgz; n != 1 {
		t.Fatalf("chart downloaded %d times, want once", n)
	}
	if n := s.count("/index.yaml") - index; n != 1 {
		t.Fatalf("index downloaded %d times, want once", n)
	}
}

// TestHelmRepoDependencies fetches missing dependencies from an HTTP
// repository: for a chart from the repository, and for a chart in a
// checkout whose Chart.lock pins an older version than the range allows.
func TestHelmRepoDependencies(t *testing.T) {
	s := newHelmTestRepo(t)
	r := &Renderer{cacheDir: t.TempDir()}
	objs, err := r.renderHelmRepoChart(t.Context(), toolInput{AppName: "rel", Namespace: "ns",
		Source: SourceRequest{Source: appspec.Source{RepoURL: s.URL, Chart: "parent"}, SHA: "1.0.0"}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, o := range objs {
		got[o.GetName()], _, _ = unstructured.NestedString(o.Object, "data", "version")
	}
	if d := gocmp.Diff(map[string]string{"rel-parent": "1.0.0", "rel-dep": "1.0.0"}, got); d != "" {
		t.Fatalf("objects (-want +got):\n%s", d)
	}

	root := t.TempDir()
	writeFiles(t, root, helmDemoChart("local", "0.1.0", map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: local\nversion: 0.1.0\ndependencies:\n  - name: dep\n    version: \"^1.0.0\"\n    repository: " + s.URL + "/\n",
		"Chart.lock": "dependencies:\n  - name: dep\n    version: 1.0.0\n    repository: " + s.URL + "/\ndigest: sha256:0\ngenerated: \"2026-01-01T00:00:00Z\"\n",
	}))
	objs, err = r.renderHelm(t.Context(), toolInput{Root: root, Dir: root, AppName: "rel", Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	got = map[string]string{}
	for _, o := range objs {
		got[o.GetName()], _, _ = unstructured.NestedString(o.Object, "data", "version")
	}
	if d := gocmp.Diff(map[string]string{"rel-local": "0.1.0", "rel-dep": "1.0.0"}, got); d != "" {
		t.Fatalf("objects (-want +got):\n%s", d)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 4 {
		t.Fatalf("the checkout was written to: %v", entries)
	}
}

// TestHelmRepoChartErrors covers a digest that does not match the index,
// a version the repository lacks and value files outside a $ref.
func TestHelmRepoChartErrors(t *testing.T) {
	s := newHelmRepoServer(t)
	helmPackage(t, s.dir, helmDemoChart("demo", "1.0.0", nil))
	s.index(t, func(idx *repo.IndexFile) {
		idx.Entries["demo"][0].Digest = strings.Repeat("0", 64)
	})
	good := newHelmTestRepo(t)
	tests := []struct {
		name      string
		src       appspec.Source
		version   string
		err       error
		retryable bool
		text      string
	}{
		{name: "digest mismatch", src: appspec.Source{RepoURL: s.URL, Chart: "demo"}, version: "1.0.0", retryable: true, text: "does not match the index"},
		{name: "missing version", src: appspec.Source{RepoURL: good.URL, Chart: "demo"}, version: "7.0.0", err: ErrChartNotFound},
		{name: "no resolved version", src: appspec.Source{RepoURL: good.URL, Chart: "demo"}, err: ErrBadPath},
		{name: "value file outside a ref", src: appspec.Source{RepoURL: good.URL, Chart: "demo", Helm: &appspec.Helm{ValueFiles: []string{"values.yaml"}}},
			version: "1.0.0", err: ErrBadPath, text: "only $ref/"},
		{name: "bad chart name", src: appspec.Source{RepoURL: good.URL, Chart: "../demo"}, version: "1.0.0", err: ErrBadPath},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Renderer{cacheDir: t.TempDir()}
			_, err := r.renderHelmRepoChart(t.Context(), toolInput{AppName: "rel", Source: SourceRequest{Source: tt.src, SHA: tt.version}})
			switch {
			case err == nil:
				t.Fatal("renderHelmRepoChart() succeeded")
			case tt.retryable && failure.TypeOf(err) != "":
				t.Fatalf("error %v is permanent, want retryable", err)
			case tt.err != nil && !errors.Is(err, tt.err):
				t.Fatalf("renderHelmRepoChart() error = %v, want %v", err, tt.err)
			case !strings.Contains(err.Error(), tt.text):
				t.Fatalf("error %q does not contain %q", err, tt.text)
			}
		})
	}
}

// helmOCIRegistry is a read-only OCI distribution registry holding Helm
// charts: enough of the API for Helm's registry client to list tags and
// pull.
type helmOCIRegistry struct {
	blobs     map[string][]byte            // digest -> content
	manifests map[string]map[string][]byte // repository -> tag or digest -> manifest
	tags      map[string][]string
}

func helmSHA(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// push stores a packaged chart under repository:tag.
func (g *helmOCIRegistry) push(t *testing.T, repository, archive string) {
	t.Helper()
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := loader.LoadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	config, err := json.Marshal(ch.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	g.blobs[helmSHA(data)], g.blobs[helmSHA(config)] = data, config
	desc := func(mediaType string, b []byte) map[string]any {
		return map[string]any{"mediaType": mediaType, "digest": helmSHA(b), "size": len(b)}
	}
	m, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        desc("application/vnd.cncf.helm.config.v1+json", config),
		"layers":        []any{desc("application/vnd.cncf.helm.chart.content.v1.tar+gzip", data)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if g.manifests[repository] == nil {
		g.manifests[repository] = map[string][]byte{}
	}
	tag := strings.ReplaceAll(ch.Metadata.Version, "+", "_")
	g.manifests[repository][tag], g.manifests[repository][helmSHA(m)] = m, m
	g.tags[repository] = append(g.tags[repository], tag)
}

func (g *helmOCIRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	notFound := func(code string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"errors":[{"code":%q,"message":"not found"}]}`, code)
	}
	serve := func(mediaType string, b []byte) {
		w.Header().Set("Content-Type", mediaType)
		w.Header().Set("Docker-Content-Digest", helmSHA(b))
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		if r.Method != http.MethodHead {
			_, _ = w.Write(b)
		}
	}
	p, ok := strings.CutPrefix(r.URL.Path, "/v2/")
	switch {
	case !ok:
		notFound("UNSUPPORTED")
	case p == "":
		serve("application/json", []byte("{}"))
	case strings.HasSuffix(p, "/tags/list"):
		name := strings.TrimSuffix(p, "/tags/list")
		if g.tags[name] == nil {
			notFound("NAME_UNKNOWN")
			return
		}
		b, _ := json.Marshal(map[string]any{"name": name, "tags": g.tags[name]})
		serve("application/json", b)
	case strings.Contains(p, "/manifests/"):
		i := strings.LastIndex(p, "/manifests/")
		m, ok := g.manifests[p[:i]][p[i+len("/manifests/"):]]
		if !ok {
			notFound("MANIFEST_UNKNOWN")
			return
		}
		serve("application/vnd.oci.image.manifest.v1+json", m)
	case strings.Contains(p, "/blobs/"):
		b, ok := g.blobs[p[strings.LastIndex(p, "/blobs/")+len("/blobs/"):]]
		if !ok {
			notFound("BLOB_UNKNOWN")
			return
		}
		serve("application/octet-stream", b)
	default:
		notFound("UNSUPPORTED")
	}
}

// TestHelmOCI resolves and renders charts from an in-process OCI registry
// (on the loopback interface, so spoken to over plain HTTP) and compares
// the render with `helm template oci://...`.
func TestHelmOCI(t *testing.T) {
	g := &helmOCIRegistry{blobs: map[string][]byte{}, manifests: map[string]map[string][]byte{}, tags: map[string][]string{}}
	pkgs := t.TempDir()
	for _, v := range []string{"1.0.0", "1.2.0", "2.0.0-rc.1", "1.3.0+build.1"} {
		g.push(t, "charts/demo", helmPackage(t, pkgs, helmDemoChart("demo", v, nil)))
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	repoURL := "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/charts"
	r := &Renderer{cacheDir: t.TempDir()}

	for _, tt := range []struct{ constraint, want string }{
		{"", "1.3.0+build.1"}, {"~1.2", "1.2.0"}, {"1.0.0", "1.0.0"}, {">=2.0.0-0", "2.0.0-rc.1"},
	} {
		got, err := r.ResolveChartVersion(t.Context(), repoURL, "demo", tt.constraint)
		if err != nil || got != tt.want {
			t.Errorf("ResolveChartVersion(%q) = %q, %v; want %q", tt.constraint, got, err, tt.want)
		}
	}
	if _, err := r.ResolveChartVersion(t.Context(), repoURL, "demo", "9.9.9"); !errors.Is(err, ErrChartNotFound) {
		t.Errorf("ResolveChartVersion(9.9.9) error = %v, want %v", err, ErrChartNotFound)
	}
	if _, err := r.ResolveChartVersion(t.Context(), repoURL, "nope", ""); !errors.Is(err, ErrChartNotFound) {
		t.Errorf("ResolveChartVersion(nope) error = %v, want %v", err, ErrChartNotFound)
	}

	for _, version := range []string{"1.2.0", "1.3.0+build.1"} {
		in := toolInput{AppName: "rel", Namespace: "ns", Source: SourceRequest{Source: appspec.Source{RepoURL: repoURL, Chart: "demo"}, SHA: version}}
		objs, err := r.renderHelmRepoChart(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		want := helmCLICanon(t, runHelmCLI(t, pkgs, "template", "rel", repoURL+"/demo", "--version", version, "--plain-http", "-n", "ns", "--include-crds"))
		if d := gocmp.Diff(want, helmCanon(t, objs)); d != "" {
			t.Fatalf("render of %s differs from helm template (-cli +ours):\n%s", version, d)
		}
	}
	in := toolInput{AppName: "rel", Source: SourceRequest{Source: appspec.Source{RepoURL: repoURL, Chart: "demo"}, SHA: "9.9.9"}}
	if _, err := r.renderHelmRepoChart(t.Context(), in); !errors.Is(err, ErrChartNotFound) {
		t.Fatalf("render of a missing tag: error = %v, want %v", err, ErrChartNotFound)
	}
}

// TestHelmSilentServer: a chart repository or OCI registry that never
// completes the handshake, stalls after its headers or stalls in the
// middle of a chart fails the resolve or render with a retryable timeout
// instead of hanging; a registry request also ends with its context.
func TestHelmSilentServer(t *testing.T) {
	silent := testbed.SilentListener(t)
	stalled := testbed.StallingServer(t, testbed.Stall{Headers: true, ContentType: "application/json"})
	midChart := testbed.StallingServer(t, testbed.Stall{Headers: true, ContentType: "application/gzip", Body: "\x1f\x8b"})
	s := newHelmRepoServer(t)
	helmPackage(t, s.dir, helmDemoChart("demo", "1.0.0", nil))
	s.index(t, func(idx *repo.IndexFile) { idx.Entries["demo"][0].URLs = []string{midChart.URL + "/demo-1.0.0.tgz"} })
	// A registry that lists and resolves, then stalls in every blob.
	g := &helmOCIRegistry{blobs: map[string][]byte{}, manifests: map[string]map[string][]byte{}, tags: map[string][]string{}}
	g.push(t, "charts/demo", helmPackage(t, t.TempDir(), helmDemoChart("demo", "1.0.0", nil)))
	blobStall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.URL.Path, "/blobs/") {
			g.ServeHTTP(w, r)
			return
		}
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the client hangs up
	}))
	t.Cleanup(blobStall.Close)
	hostOf := func(u string) string { return strings.TrimPrefix(u, "http://") }

	resolve := func(ctx context.Context, r *Renderer, repoURL string) error {
		_, err := r.ResolveChartVersion(ctx, repoURL, "demo", "")
		return err
	}
	render := func(ctx context.Context, r *Renderer, repoURL string) error {
		_, err := r.renderHelmRepoChart(ctx, toolInput{AppName: "rel", Source: SourceRequest{Source: appspec.Source{RepoURL: repoURL, Chart: "demo"}, SHA: "1.0.0"}})
		return err
	}
	for _, tt := range []struct {
		name    string
		repoURL string
		run     func(context.Context, *Renderer, string) error
		ctx     time.Duration // a deadline of the context, with no net timeout
		want    string
	}{
		{name: "index, tls handshake", repoURL: "https://" + silent, run: resolve, want: "timed out after 200ms"},
		{name: "index, after the headers", repoURL: stalled.URL, run: resolve, want: "timed out after 200ms"},
		{name: "chart, in the body", repoURL: s.URL, run: render, want: "timed out after 200ms"},
		{name: "oci tags, no answer", repoURL: "oci://" + silent + "/charts", run: resolve, want: "timed out after 200ms"},
		{name: "oci tags, after the headers", repoURL: "oci://" + hostOf(stalled.URL) + "/charts", run: resolve, want: "timed out after 200ms"},
		{name: "oci pull, in a blob", repoURL: "oci://" + hostOf(blobStall.URL) + "/charts", run: render, want: "timed out after 200ms"},
		{name: "oci tags, context deadline", repoURL: "oci://" + hostOf(stalled.URL) + "/charts", run: resolve, ctx: 200 * time.Millisecond,
			want: "context deadline exceeded"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &Renderer{cacheDir: t.TempDir(), netTimeout: 200 * time.Millisecond}
			ctx := t.Context()
			if tt.ctx > 0 {
				r.netTimeout = time.Hour
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.ctx)
				defer cancel()
			}
			errc := make(chan error, 1)
			go func() { errc <- tt.run(ctx, r, tt.repoURL) }()
			var err error
			select {
			case err = <-errc:
			case <-time.After(time.Minute):
				t.Fatal("no answer: the call hangs")
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one with %q", err, tt.want)
			}
			if typ := failure.TypeOf(err); typ != "" {
				t.Fatalf("error %v is permanent (%s), want retryable", err, typ)
			}
		})
	}
}
