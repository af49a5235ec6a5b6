package appset

import (
	"fmt"
	"testing"
)

// BenchmarkGitDirectories1000 evaluates a git-directories set over a
// repository of 1000 directories, its mirror and checkout warm: the cost
// of one evaluation of the benchmark set, without syncing.
func BenchmarkGitDirectories1000(b *testing.B) {
	url, w, git := gitRepoB(b)
	files := map[string]string{}
	for i := range 1000 {
		files[fmt.Sprintf("apps/app-%04d/kustomization.yaml", i)] = "resources: []\n"
	}
	for p, c := range files {
		if err := w.WriteFile(p, c); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := w.CommitAndPush(b.Context(), "1000 apps"); err != nil {
		b.Fatal(err)
	}
	set, err := Parse([]byte(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: bench}
spec:
  generators:
  - git: {repoURL: '` + url + `', directories: [{path: 'apps/*'}]}
  template:
    metadata: {name: '{{path.basename}}'}
    spec:
      project: default
      source: {repoURL: '` + url + `', path: '{{path}}'}
      destination: {server: 'https://kubernetes.default.svc', namespace: '{{path.basename}}'}
`))
	if err != nil {
		b.Fatal(err)
	}
	g := New(nil, git, nil)
	if apps, err := g.Generate(b.Context(), set); err != nil || len(apps) != 1000 {
		b.Fatalf("warm-up: %d apps, %v", len(apps), err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := g.Generate(b.Context(), set); err != nil {
			b.Fatal(err)
		}
	}
}
