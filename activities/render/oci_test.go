package render

import (
	"path/filepath"
	"testing"

	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/testbed/ociregistry"
)

// TestRenderOCISource renders apps from OCI artifacts in an in-process
// registry, through the source activities as a worker does, and compares
// each with the reference CLI run on the folder that was pushed: a folder
// pushed as `oras push` packs it (under its own name) rendered with
// kustomize, and a Helm chart pushed as a chart artifact rendered with
// helm at path ".".
func TestRenderOCISource(t *testing.T) {
	reg := ociregistry.Start()
	t.Cleanup(reg.Close)
	kfix, err := filepath.Abs("testdata/kustomize")
	if err != nil {
		t.Fatal(err)
	}
	hfix := helmTestdata(t)
	kbin := refTool(t, "kustomize")
	pack := func(dir, prefix string) []byte {
		b, err := ociregistry.TarGzDir(dir, prefix)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name, repo, tag, path string
		layer                 ociregistry.Layer
		want                  func() string
	}{
		{
			name: "kustomize folder", repo: "shop/kustomize", tag: "1.2.0", path: "kustomize/overlay",
			layer: ociregistry.Layer{MediaType: source.MediaTypeTarGzip, Data: pack(kfix, "kustomize")},
			want: func() string {
				return helmCanon(t, parseRef(t, "kustomize build", runRef(t, kfix, kbin, "build", "overlay")))
			},
		},
		{
			name: "helm chart", repo: "charts/webapp", tag: "0.1.0", path: ".",
			layer: ociregistry.Layer{MediaType: source.MediaTypeHelmChart, Data: pack(filepath.Join(hfix, "webapp"), "webapp")},
			want: func() string {
				return helmCLICanon(t, runHelmCLI(t, hfix, "template", "shop", filepath.Join(hfix, "webapp"), "-n", "store", "--include-crds"))
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dgst, err := reg.Push(t.Context(), tc.repo, []string{tc.tag}, tc.layer)
			if err != nil {
				t.Fatal(err)
			}
			git, err := source.New(t.TempDir(), nil, discardLogger())
			if err != nil {
				t.Fatal(err)
			}
			res, err := git.ResolveRevision(t.Context(), source.ResolveInput{RepoURL: reg.URL(tc.repo), Revision: ">=" + tc.tag})
			if err != nil {
				t.Fatal(err)
			}
			if res.SHA != dgst {
				t.Fatalf("resolved %s, want the digest %s", res.SHA, dgst)
			}
			r, err := NewRenderer(Config{Store: NewMemoryStore(), Git: git, CacheDir: t.TempDir(), Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			req := SingleSource("shop", "store", appspec.Source{RepoURL: reg.URL(tc.repo), Path: tc.path}, res.SHA)
			ref, err := r.Render(t.Context(), req, true)
			if err != nil {
				t.Fatal(err)
			}
			if ref.SHA != dgst {
				t.Errorf("manifest ref SHA %s, want the digest %s", ref.SHA, dgst)
			}
			objs, err := r.Load(t.Context(), ref)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := helmCanon(t, objs), tc.want(); got != want {
				t.Fatalf("render of the OCI source differs from the reference CLI:\n--- want\n%s\n--- got\n%s", want, got)
			}
		})
	}
}
