package render

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/manifest"
)

// buildEnv is the environment Argo CD gives its tools about the app being
// rendered (ARGOCD_APP_NAME and friends). Kustomize images and labels,
// Jsonnet variables and plugin env entries may refer to it as $VAR or
// ${VAR}; plugins receive it as environment variables.
type buildEnv map[string]string

func newBuildEnv(in toolInput) buildEnv {
	short := func(n int) string {
		if len(in.Source.SHA) > n {
			return in.Source.SHA[:n]
		}
		return in.Source.SHA
	}
	return buildEnv{
		"ARGOCD_APP_NAME":                   in.AppName,
		"ARGOCD_APP_NAMESPACE":              in.Namespace,
		"ARGOCD_APP_REVISION":               in.Source.SHA,
		"ARGOCD_APP_REVISION_SHORT":         short(7),
		"ARGOCD_APP_REVISION_SHORT_8":       short(8),
		"ARGOCD_APP_SOURCE_REPO_URL":        in.Source.RepoURL,
		"ARGOCD_APP_SOURCE_PATH":            in.Source.Path,
		"ARGOCD_APP_SOURCE_TARGET_REVISION": in.Source.TargetRevision,
	}
}

// subst expands $VAR and ${VAR} from the build environment as Argo CD
// does: unknown variables become empty and $$ is a literal $.
func (e buildEnv) subst(s string) string {
	return os.Expand(s, func(name string) string {
		if name == "$" {
			return "$"
		}
		return e[name]
	})
}

// environ lists the variables as NAME=value, sorted.
func (e buildEnv) environ() []string {
	out := make([]string, 0, len(e))
	for k, v := range e {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// This file also holds what the Kustomize, Jsonnet and plugin tools share.

// checkoutPaths returns the real path of the checkout root and the app
// directory relative to it.
func checkoutPaths(in toolInput) (root, appRel string, err error) {
	root, err = filepath.EvalSymlinks(in.Root)
	if err != nil {
		return "", "", fmt.Errorf("checkout root: %w", err)
	}
	appRel, err = filepath.Rel(root, in.Dir)
	if err != nil || !within(in.Dir, root) {
		return "", "", fmt.Errorf("%w: %q is outside the repository", ErrBadPath, in.Source.Path)
	}
	return root, appRel, nil
}

// addObjects appends objs to out, refusing more than manifest.MaxObjects.
func addObjects(out, objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	if out = append(out, objs...); len(out) > manifest.MaxObjects {
		return nil, fmt.Errorf("%w: more than %d objects", manifest.ErrInvalidManifest, manifest.MaxObjects)
	}
	return out, nil
}
