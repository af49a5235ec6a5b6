package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// workload is a way B1 creates its fleet (issues 33 and 29); each is
// timed and counted the same way.
type workload int

const (
	// dirPerApp is the peer's workload, B1: app i renders apps/app-<i>
	// of one repository, and is created through the API as an Argo CD
	// Application with automated prune and selfHeal.
	dirPerApp workload = iota
	// sharedDir is B1-shared: every app renders the one directory app/,
	// created through the API as Windlass JSON.
	sharedDir
	// appSet is B1-set: one git-directories ApplicationSet over
	// apps/*, the same N apps as dirPerApp.
	appSet
)

// String is the benchmark's name, in figures and in -only.
func (w workload) String() string {
	switch w {
	case sharedDir:
		return "B1-shared"
	case appSet:
		return "B1-set"
	}
	return "B1"
}

// prefix names run r's apps at size n: prefix0000, prefix0001 … The
// workloads' prefixes differ in their first letters, so that a search for
// one never matches another's apps.
func (w workload) prefix(n, r int) string {
	switch w {
	case sharedDir:
		return fmt.Sprintf("b1n%dr%d-", n, r)
	case appSet:
		return fmt.Sprintf("b1sn%dr%d-app-", n, r)
	}
	return fmt.Sprintf("b1dn%dr%d-app-", n, r)
}

// repo is the repository of n apps of w, made once per size and reused.
// B1 and B1-set have a repository each, with the same content: on a
// shared one, whichever ran second found every manifest in the render
// cache and never rendered, and was measured cheaper for it.
func (w workload) repo(ctx context.Context, e *env, n int) (string, error) {
	var name string
	switch w {
	case sharedDir:
		name = fmt.Sprintf("b1-%d", n)
	case appSet:
		name = fmt.Sprintf("b1-set-%d", n)
	default:
		name = fmt.Sprintf("b1-dirs-%d", n)
	}
	if url, ok := e.repos[name]; ok {
		return url, nil
	}
	var (
		url string
		err error
	)
	if w == sharedDir {
		url, _, err = e.newRepo(ctx, name)
	} else {
		url, err = e.newDirsRepo(ctx, name, n)
	}
	if err == nil {
		e.repos[name] = url
	}
	return url, err
}

// create creates the fleet f of w from repoURL in one burst.
func (w workload) create(ctx context.Context, e *env, repoURL string, f *fleet) error {
	switch w {
	case sharedDir:
		return e.createAll(ctx, f.names, 16, func(name string) any { return appBody(name, repoURL, false) })
	case appSet:
		_, err := e.request(ctx, http.MethodPost, "/api/v1/applicationsets", dirSetYAML(f.set, repoURL, strings.TrimSuffix(f.prefix, "app-")), nil)
		return err
	}
	return e.createAll(ctx, f.names, 16, func(name string) any {
		return argoAppYAML(name, repoURL, appDir(strings.TrimPrefix(name, strings.TrimSuffix(f.prefix, "app-"))))
	})
}

// newFleet is run r's fleet of n apps of w.
func (w workload) newFleet(n, r int) *fleet {
	f := &fleet{prefix: w.prefix(n, r), names: appNames(w.prefix(n, r), n)}
	if w == appSet {
		f.set = fmt.Sprintf("b1n%dr%d", n, r)
	}
	return f
}

// appDir is the directory of the app whose name ends in base (app-0042).
func appDir(base string) string { return "apps/" + base }

// newDirsRepo creates a repository of n directories apps/app-<i>, each
// holding the fixture as one manifests.yaml.
func (e *env) newDirsRepo(ctx context.Context, name string, n int) (string, error) {
	repoURL, err := e.git.CreateRepo(name)
	if err != nil {
		return "", err
	}
	manifests := strings.Join([]string{configMapYAML("0"), deploymentYAML, serviceYAML}, "---\n")
	files := make(map[string]string, n)
	for _, name := range appNames("app-", n) {
		files[appDir(name)+"/manifests.yaml"] = manifests
	}
	_, err = e.pushFiles(ctx, name, repoURL, files)
	return repoURL, err
}

// argoAppYAML is B1's app as Argo CD writes it: automated prune and
// selfHeal, CreateNamespace, in a namespace of its own named like it, at
// the default refresh interval.
func argoAppYAML(name, repoURL, path string) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s, namespace: argocd}
spec:
  project: default
  source: {repoURL: '%s', targetRevision: main, path: %s}
  destination: {server: '%s', namespace: %s}
  syncPolicy:
    automated: {prune: true, selfHeal: true}
    syncOptions: [CreateNamespace=true]
`, name, repoURL, path, appspec.InClusterServer, name)
}

// dirSetYAML is B1-set's ApplicationSet: a git-directories generator over
// apps/*, whose apps <prefix>app-<i> are B1's.
func dirSetYAML(name, repoURL, prefix string) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: %s}
spec:
  generators:
  - git:
      repoURL: '%s'
      revision: main
      directories: [{path: 'apps/*'}]
  template:
    metadata: {name: '%s{{path.basename}}'}
    spec:
      project: default
      source: {repoURL: '%s', targetRevision: main, path: '{{path}}'}
      destination: {server: '%s', namespace: '%s{{path.basename}}'}
      syncPolicy:
        automated: {prune: true, selfHeal: true}
        syncOptions: [CreateNamespace=true]
`, name, repoURL, prefix, repoURL, appspec.InClusterServer, prefix)
}
