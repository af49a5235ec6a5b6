package render

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// outsideSecret is the content of a file beside the checkout; no render
// may read it.
const outsideSecret = "outside-secret-7f3a9c"

// linkThroughSlash makes links in root whose text never leaves root
// lexically, yet the last one resolves to "/": a/up is "..", L is
// "a/up/.." (the parent of root) and each Mi is "M(i-1)/..", one level
// higher. It returns the last link's path relative to root.
func linkThroughSlash(t *testing.T, root string) string {
	t.Helper()
	links := [][2]string{{"a/up", ".."}, {"L", "a/up/.."}, {"M1", "L/.."}}
	depth := strings.Count(filepath.Clean(root), string(filepath.Separator))
	for i := 2; i <= depth; i++ {
		links = append(links, [2]string{fmt.Sprintf("M%d", i), fmt.Sprintf("M%d/..", i-1)})
	}
	for _, l := range links {
		symlink(t, root, l[0], l[1])
	}
	return links[len(links)-1][0]
}

func symlink(t *testing.T, root, link, target string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(link))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// TestRepositoryReadsStayInRoot plants, at the file each renderer reads,
// a chain of links through "/" to a file beside the checkout, a link
// straight out, a chain to /dev/zero and a FIFO. Each render must fail
// naming the file, and never show the outside content.
func TestRepositoryReadsStayInRoot(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.yaml")
	writeFiles(t, filepath.Dir(outside), map[string]string{"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: stolen}\nstringData: {token: " + outsideSecret + "}\n"})

	type tool struct {
		files map[string]string
		bad   string // the file to replace, relative to the root
		req   func(src appspec.Source) Request
		shown string // how the error names it
	}
	single := func(path string, mod func(*appspec.Source)) func(appspec.Source) Request {
		return func(src appspec.Source) Request {
			src.Path = path
			if mod != nil {
				mod(&src)
			}
			return SingleSource("app", "ns", src, "sha")
		}
	}
	chart := map[string]string{"chart/Chart.yaml": helmOKChart, "chart/templates/cm.yaml": cm("x")}
	tools := map[string]tool{
		"directory": {files: map[string]string{"app/cm.yaml": cm("a")}, bad: "app/evil.yaml", req: single("app", nil)},
		"jsonnet": {files: map[string]string{"app/main.jsonnet": "import 'evil.libsonnet'"}, bad: "app/evil.libsonnet",
			req: single("app", nil), shown: "evil.libsonnet"},
		"jsonnet manifest": {files: map[string]string{"app/main.jsonnet": "{}"}, bad: "app/evil.yaml", req: single("app", nil)},
		"kustomize": {files: map[string]string{"app/kustomization.yaml": "resources: [cm.yaml, evil.yaml]\n", "app/cm.yaml": cm("a")},
			bad: "app/evil.yaml", req: single("app", nil)},
		"helm chart": {files: chart, bad: "chart/templates/evil.yaml", req: single("chart", nil)},
		"helm valueFiles": {files: chart, bad: "values/evil.yaml", req: single("chart", func(s *appspec.Source) {
			s.Helm = &appspec.Helm{ValueFiles: []string{"../values/evil.yaml"}}
		})},
		"helm $ref valueFiles": {files: chart, bad: "values/evil.yaml", shown: "$vals/values/evil.yaml", req: func(src appspec.Source) Request {
			ref := src
			ref.Ref = "vals"
			src.Path = "chart"
			src.Helm = &appspec.Helm{ValueFiles: []string{"$vals/values/evil.yaml"}}
			return Request{AppName: "app", Namespace: "ns", Sources: []SourceRequest{{Source: src, SHA: "sha"}, {Source: ref, SHA: "sha"}}}
		}},
	}
	plants := map[string]func(t *testing.T, root, bad string){
		"symlink chain through /": func(t *testing.T, root, bad string) {
			top := linkThroughSlash(t, root)
			symlink(t, root, bad, strings.Repeat("../", strings.Count(bad, "/"))+top+outside)
		},
		"symlink out of the checkout": func(t *testing.T, root, bad string) { symlink(t, root, bad, outside) },
		"symlink chain to /dev/zero": func(t *testing.T, root, bad string) {
			top := linkThroughSlash(t, root)
			symlink(t, root, bad, strings.Repeat("../", strings.Count(bad, "/"))+top+"/dev/zero")
		},
		"fifo": func(t *testing.T, root, bad string) {
			p := filepath.Join(root, filepath.FromSlash(bad))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		},
	}
	for toolName, tl := range tools {
		for plantName, plant := range plants {
			t.Run(toolName+"/"+plantName, func(t *testing.T) {
				root := t.TempDir()
				writeFiles(t, root, tl.files)
				plant(t, root, tl.bad)
				src := appspec.Source{RepoURL: "https://example.com/r.git"}
				_, err := renderVia(t, root, nil, tl.req(src))
				shown := tl.bad
				if tl.shown != "" {
					shown = tl.shown
				}
				wantError(t, err, nil, shown, outsideSecret, root, filepath.Dir(outside))
			})
		}
	}
}

// TestRepoFileLimit checks Config.MaxFileBytes.
func TestRepoFileLimit(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"app/big.yaml": cm("big") + "data: {x: " + strings.Repeat("y", 200) + "}\n"})
	r, err := NewRenderer(Config{Store: NewMemoryStore(), Git: fixedRoot(root), Logger: discardLogger(), MaxFileBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	src := appspec.Source{RepoURL: "https://example.com/r.git", Path: "app"}
	_, err = r.Render(t.Context(), SingleSource("app", "ns", src, "sha"), true)
	wantError(t, err, ErrFileTooLarge, `"app/big.yaml" is larger than 100 bytes`, root)
}
