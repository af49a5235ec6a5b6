package render

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// appDir returns the real path of the app's directory inside the checkout
// root, refusing paths that leave it (also through symlinks).
func appDir(root, p string) (string, error) {
	if err := appspec.ValidRepoPath(p); err != nil {
		return "", fmt.Errorf("%w: %q: %w", ErrBadPath, p, err)
	}
	repo, err := openRepoRoot(root, 0)
	if err != nil {
		return "", err
	}
	defer repo.Close()
	rel, err := repo.rel(p)
	if err != nil {
		return "", fmt.Errorf("%w: %q leaves the repository", ErrBadPath, p)
	}
	st, err := repo.stat(rel)
	switch {
	case errors.Is(err, ErrPathNotFound):
		return "", fmt.Errorf("%w: %q", ErrPathNotFound, p)
	case err != nil:
		return "", err
	case !st.IsDir():
		return "", fmt.Errorf("%w: %q is not a directory", ErrPathNotFound, p)
	}
	// The repoRoot has checked every link on the way.
	return filepath.EvalSymlinks(filepath.Join(repo.dir, filepath.FromSlash(rel)))
}

// detectTool names the config-management tool of dir the way Argo CD
// detects it: Chart.yaml means Helm, a kustomization file Kustomize, a
// configured plugin's discovery rule that plugin, a *.jsonnet file Jsonnet;
// anything else is a plain directory.
func (r *Renderer) detectTool(ctx context.Context, root, dir string) (string, error) {
	for _, c := range []struct{ file, tool string }{
		{"Chart.yaml", appspec.ToolHelm}, {"kustomization.yaml", appspec.ToolKustomize},
		{"kustomization.yml", appspec.ToolKustomize}, {"Kustomization", appspec.ToolKustomize},
	} {
		if _, err := os.Stat(filepath.Join(dir, c.file)); err == nil {
			return c.tool, nil
		}
	}
	if _, ok, err := r.discoverPlugin(ctx, root, dir); err != nil || ok {
		return appspec.ToolPlugin, err
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.jsonnet")); len(m) > 0 {
		return appspec.ToolJsonnet, nil
	}
	return appspec.ToolDirectory, nil
}

// renderDirectory parses the manifests of a plain directory (in.Dir),
// reading them through the checkout's repoRoot.
func renderDirectory(in toolInput, opts *appspec.Directory) ([]*unstructured.Unstructured, error) {
	if opts == nil {
		opts = &appspec.Directory{}
	}
	repo, err := openRepoRoot(in.Root, in.Limit)
	if err != nil {
		return nil, err
	}
	defer repo.Close()
	files, err := manifestFiles(repo.dir, in.Dir, *opts)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, rel := range files {
		if strings.EqualFold(path.Ext(rel), ".jsonnet") {
			continue
		}
		objs, err := parseManifestFile(repo, rel)
		if err != nil {
			return nil, err
		}
		if out, err = addObjects(out, objs); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// matchAny matches rel (or its base name) against a glob, or a brace list of
// globs such as {a.yaml,b/*.yaml}, as Argo CD's include/exclude do.
func matchAny(pattern, rel string) bool {
	pats := []string{pattern}
	if strings.HasPrefix(pattern, "{") && strings.HasSuffix(pattern, "}") {
		pats = strings.Split(pattern[1:len(pattern)-1], ",")
	}
	for _, p := range pats {
		p = strings.TrimSpace(p)
		if ok, _ := path.Match(p, rel); ok {
			return true
		}
		if !strings.Contains(p, "/") {
			if ok, _ := path.Match(p, path.Base(rel)); ok {
				return true
			}
		}
	}
	return false
}
