package render

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// benchTools are the rows of BenchmarkRender. A row's fixture is the
// directory testdata/<fixture>, pushed whole to a Git repository, and
// path is the application inside it. A row whose fixture or path is
// missing, or whose tool says not implemented, is skipped; source, when
// set, adds the tool's options; objects, when set, is how many objects
// the row renders (TestBenchFixtures checks it).
//
// The first four are issue 8's B5 set (testdata/bench): the guestbook as
// plain YAML, through Kustomize and as a Helm chart with a values file,
// and a generated chart of 300 objects. The others are the package's own
// fixtures, one per tool.
var benchTools = []struct {
	name, fixture, path string
	source              func(*appspec.Source)
	objects             int
}{
	{name: "guestbook", fixture: "bench", path: "guestbook", objects: 2},
	{name: "kustomize-guestbook", fixture: "bench", path: "kustomize-guestbook", objects: 2},
	{name: "helm-guestbook", fixture: "bench", path: "helm-guestbook", objects: 2, source: func(s *appspec.Source) {
		s.Helm = &appspec.Helm{ValueFiles: []string{"values-production.yaml"}}
	}},
	{name: "helm-300", fixture: "bench", path: "helm-300", objects: 300},
	{name: "directory", path: "app"}, // generated: see directoryFixture
	{name: "helm", fixture: "helm", path: "webapp"},
	{name: "kustomize", fixture: "kustomize", path: "overlay"},
	{name: "jsonnet", fixture: "jsonnet", path: "app", source: func(s *appspec.Source) {
		s.Directory = &appspec.Directory{Jsonnet: &appspec.Jsonnet{
			TLAs:    []appspec.JsonnetVar{{Name: "env", Value: "prod"}, {Name: "replicas", Value: "3", Code: true}},
			ExtVars: []appspec.JsonnetVar{{Name: "team", Value: "platform"}, {Name: "debug", Value: "false", Code: true}},
			Libs:    []string{"lib"},
		}}
	}},
}

// BenchmarkRender measures Render through the real Git source (the test
// bed's HTTP Git server) and the real Redis store, per tool:
//
//   - cache-hit: the manifests are in Redis;
//   - cold-checkout: a fresh cache dir, so clone the mirror, write the
//     tree, render and store;
//   - warm-mirror: the mirror is there but the tree was evicted;
//   - warm-tree: the tree is there, the cache is bypassed (the tool alone).
//
// hack/bench.sh (make bench) runs it against a started Redis.
func BenchmarkRender(b *testing.B) {
	srv, err := testbed.StartGitServer(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	rdb := redis.NewClient(&redis.Options{Addr: redisForTest(b)})
	b.Cleanup(func() { _ = rdb.Close() })
	store := RedisStore{Client: rdb}

	for _, tool := range benchTools {
		b.Run(tool.name, func(b *testing.B) {
			files := directoryFixture()
			if tool.fixture != "" {
				files = readFixture(b, filepath.Join("testdata", tool.fixture))
			}
			if !hasDir(files, tool.path) {
				b.Skipf("no fixture testdata/%s/%s", tool.fixture, tool.path)
			}
			url, sha := pushFixture(b, srv, tool.name, files)
			src := appspec.Source{RepoURL: url, Path: tool.path}
			if tool.source != nil {
				tool.source(&src)
			}
			req := SingleSource("bench-"+tool.name, "default", src, sha)
			newRenderer := func(b *testing.B, opts ...source.Option) (*Renderer, *source.Activities) {
				src, err := source.New(b.TempDir(), nil, quietLogger(), opts...)
				if err != nil {
					b.Fatal(err)
				}
				r, err := NewRenderer(Config{Store: store, Git: src, CacheDir: b.TempDir(), Logger: quietLogger()})
				if err != nil {
					b.Fatal(err)
				}
				return r, src
			}
			warm, warmSrc := newRenderer(b, source.WithTreeGrace(0))
			ref, err := warm.Render(b.Context(), req, true)
			if err != nil {
				b.Fatal(err)
			}
			if tool.objects > 0 && ref.Count != tool.objects {
				b.Fatalf("%s rendered %d objects, want %d", tool.name, ref.Count, tool.objects)
			}

			b.Run("cache-hit", func(b *testing.B) {
				stored, _ := rdb.Get(b.Context(), ref.Key).Bytes()
				raw, _ := decodeEntry(stored)
				for b.Loop() {
					if _, err := warm.Render(b.Context(), req, false); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(ref.Count), "objects")
				b.ReportMetric(float64(len(stored)), "stored-bytes")
				b.ReportMetric(float64(len(raw)), "json-bytes")
			})
			b.Run("cold-checkout", func(b *testing.B) {
				for b.Loop() {
					b.StopTimer()
					r, _ := newRenderer(b)
					b.StartTimer()
					if _, err := r.Render(b.Context(), req, true); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("warm-mirror", func(b *testing.B) {
				for b.Loop() {
					b.StopTimer()
					if _, err := warmSrc.Evict(b.Context(), 0, 0); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					if _, err := warm.Render(b.Context(), req, true); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("warm-tree", func(b *testing.B) {
				for b.Loop() {
					if _, err := warm.Render(b.Context(), req, true); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// directoryFixture is a plain-YAML application of 60 objects, the size of
// a typical microservice's manifests.
func directoryFixture() map[string]string {
	files := map[string]string{}
	for i := range 20 {
		name := fmt.Sprintf("svc-%02d", i)
		files["app/"+name+".yaml"] = fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s, labels: {app: %[1]s}}
spec:
  replicas: 2
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers:
      - name: main
        image: registry.example/%[1]s:1.0.%[2]d
        ports: [{containerPort: 8080}]
        resources: {requests: {cpu: 100m, memory: 128Mi}, limits: {memory: 256Mi}}
        env: [{name: LOG_LEVEL, value: info}, {name: PORT, value: "8080"}]
---
apiVersion: v1
kind: Service
metadata: {name: %[1]s}
spec: {selector: {app: %[1]s}, ports: [{port: 80, targetPort: 8080}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: %[1]s-config}
data: {settings.json: '{"feature": true, "timeout": 30}'}
`, name, i)
	}
	files["README.md"] = "bench fixture\n"
	return files
}

// readFixture reads every file below dir, keyed by slash path.
func readFixture(b *testing.B, dir string) map[string]string {
	b.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return err
		}
		c, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(c)
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		b.Skipf("no fixture %s", dir)
	}
	if err != nil {
		b.Fatal(err)
	}
	return files
}

func hasDir(files map[string]string, dir string) bool {
	for p := range files {
		if strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// pushFixture creates repository name on srv holding files and returns its
// URL and commit.
func pushFixture(b *testing.B, srv *testbed.GitServer, name string, files map[string]string) (string, string) {
	b.Helper()
	url, err := srv.CreateRepo(name + ".git")
	if err != nil {
		b.Fatal(err)
	}
	w, err := testbed.NewWorkRepo(b.Context(), b.TempDir(), url, nil)
	if err != nil {
		b.Fatal(err)
	}
	for p, c := range files {
		if err := w.WriteFile(p, c); err != nil {
			b.Fatal(err)
		}
	}
	sha, err := w.CommitAndPush(b.Context(), "fixture")
	if err != nil {
		b.Fatal(err)
	}
	return url, sha
}

// BenchmarkEntryCodec encodes and decodes the manifest cache entry of a
// 60-object app, as a render's store and a load do; its allocations per
// operation are the figure (docs/benchmarks.md, History).
func BenchmarkEntryCodec(b *testing.B) {
	var objs []string
	for i := range 60 {
		objs = append(objs, fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%d","namespace":"demo"},"data":{"key":%q}}`, i, strings.Repeat("v", 200+i)))
	}
	raw := []byte("[" + strings.Join(objs, ",") + "]")
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		enc, err := encodeEntry(raw, len(objs))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := decodeEntry(enc); err != nil {
			b.Fatal(err)
		}
	}
}
