package render

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// appDir returns the directory of the app inside the checkout root,
// refusing paths that leave it (also through symlinks).
func appDir(root, p string) (string, error) {
	if err := appspec.ValidRepoPath(p); err != nil {
		return "", fmt.Errorf("%w: %q: %w", ErrBadPath, p, err)
	}
	dir := filepath.Join(root, filepath.FromSlash(p))
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("%w: %q", ErrPathNotFound, p)
	}
	rootReal, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	if real != rootReal && !strings.HasPrefix(real, rootReal+string(os.PathSeparator)) {
		return "", fmt.Errorf("%w: %q leaves the repository", ErrBadPath, p)
	}
	st, err := os.Stat(real)
	if err != nil || !st.IsDir() {
		return "", fmt.Errorf("%w: %q is not a directory", ErrPathNotFound, p)
	}
	return real, nil
}

// detectTool names the config-management tool of dir the way Argo CD
// detects it: Chart.yaml means Helm, a kustomization file Kustomize, a
// configured plugin's discovery rule that plugin, a *.jsonnet file Jsonnet;
// anything else is a plain directory.
func (r *Renderer) detectTool(dir string) string {
	for _, c := range []struct{ file, tool string }{
		{"Chart.yaml", appspec.ToolHelm}, {"kustomization.yaml", appspec.ToolKustomize},
		{"kustomization.yml", appspec.ToolKustomize}, {"Kustomization", appspec.ToolKustomize},
	} {
		if _, err := os.Stat(filepath.Join(dir, c.file)); err == nil {
			return c.tool
		}
	}
	if _, ok := r.discoverPlugin(dir); ok {
		return appspec.ToolPlugin
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.jsonnet")); len(m) > 0 {
		return appspec.ToolJsonnet
	}
	return appspec.ToolDirectory
}

// renderDirectory parses the manifests of a plain directory.
func renderDirectory(dir string, opts *appspec.Directory) ([]*unstructured.Unstructured, error) {
	if opts == nil {
		opts = &appspec.Directory{}
	}
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && (!opts.Recurse || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch strings.ToLower(path.Ext(rel)) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		if opts.Include != "" && !matchAny(opts.Include, rel) {
			return nil
		}
		if opts.Exclude != "" && matchAny(opts.Exclude, rel) {
			return nil
		}
		files = append(files, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk %s: %w", dir, err)
	}
	sort.Strings(files)
	var out []*unstructured.Unstructured
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return nil, err
		}
		if st.Size() > manifest.MaxFileBytes {
			return nil, fmt.Errorf("%w: %s is larger than %d bytes", manifest.ErrInvalidManifest, filepath.Base(f), manifest.MaxFileBytes)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(dir, f)
		objs, err := manifest.Parse(filepath.ToSlash(rel), b)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
		if len(out) > manifest.MaxObjects {
			return nil, fmt.Errorf("%w: more than %d objects", manifest.ErrInvalidManifest, manifest.MaxObjects)
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
