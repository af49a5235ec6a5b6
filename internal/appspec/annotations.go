package appspec

import (
	"maps"
	"path"
	"strings"
)

// Argo CD annotations on an Application that change what Windlass does.
const (
	// AnnotationRefresh ("normal" or "hard") asks for one refresh; the app
	// removes it from its spec once taken.
	AnnotationRefresh = "argocd.argoproj.io/refresh"
	// AnnotationSkipReconcile ("true") pauses the app: no reconcile pass,
	// no sync.
	AnnotationSkipReconcile = "argocd.argoproj.io/skip-reconcile"
	// AnnotationManifestPaths lists, ";"-separated, the paths whose
	// changes a Git webhook push refreshes the app for.
	AnnotationManifestPaths = "argocd.argoproj.io/manifest-generate-paths"
)

// Values of AnnotationRefresh.
const (
	RefreshNormal = "normal"
	RefreshHard   = "hard"
)

// RefreshAnnotation returns the refresh the app's annotation asks for:
// ok is false without one, hard says it is a hard refresh.
func (a Application) RefreshAnnotation() (hard, ok bool) {
	v, ok := a.Annotations[AnnotationRefresh]
	return v == RefreshHard, ok
}

// WithoutRefreshAnnotation returns the app without AnnotationRefresh.
func (a Application) WithoutRefreshAnnotation() Application {
	if _, ok := a.Annotations[AnnotationRefresh]; !ok {
		return a
	}
	kv := maps.Clone(a.Annotations) //workflowcheck:ignore (a copy is the same in any order)
	delete(kv, AnnotationRefresh)
	a.Annotations = nonEmpty(kv)
	return a
}

// SkipReconcile says AnnotationSkipReconcile pauses the app.
func (a Application) SkipReconcile() bool {
	return a.Annotations[AnnotationSkipReconcile] == "true"
}

// ManifestPaths returns the repository paths (from the repository's root,
// without a leading "/", "" for the root) that AnnotationManifestPaths names for a source
// whose path is srcPath: "." is the source's path, a relative path is
// under it, and one that starts with "/" is from the root. ok is false
// without the annotation (every push matters).
func (a Application) ManifestPaths(srcPath string) (paths []string, ok bool) {
	v, ok := a.Annotations[AnnotationManifestPaths]
	if !ok {
		return nil, false
	}
	for _, p := range strings.Split(v, ";") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !strings.HasPrefix(p, "/") {
			p = path.Join("/", srcPath, p)
		}
		paths = append(paths, strings.TrimPrefix(path.Clean(p), "/"))
	}
	return paths, true
}

// validAnnotations checks the values of the annotations Windlass acts on.
func validAnnotations(kv map[string]string) error {
	if v, ok := kv[AnnotationRefresh]; ok && v != RefreshNormal && v != RefreshHard {
		return &FieldError{Field: "annotations." + AnnotationRefresh, Reason: `must be "normal" or "hard", not "` + v + `"`}
	}
	if v, ok := kv[AnnotationSkipReconcile]; ok && v != "true" && v != "false" {
		return &FieldError{Field: "annotations." + AnnotationSkipReconcile, Reason: `must be "true" or "false", not "` + v + `"`}
	}
	return nil
}
