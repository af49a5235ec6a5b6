package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/google/go-jsonnet"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// ErrJsonnet is wrapped by Jsonnet evaluation errors, which retrying
// cannot fix.
var ErrJsonnet = failure.Permanent("JsonnetFailed", "jsonnet evaluation failed")

// Jsonnet limits.
const (
	// maxJsonnetOutput bounds the JSON one file may evaluate to.
	maxJsonnetOutput = 64 << 20
	// jsonnetMaxStack bounds the evaluation's call depth (go-jsonnet's
	// default).
	jsonnetMaxStack = 500
)

// jsonnetSlots bounds the evaluations running at once. go-jsonnet cannot
// be interrupted: when the context ends the render returns at once, but
// the abandoned evaluation runs on in its goroutine, holding its slot,
// until it finishes. The slots bound how many such goroutines (and the
// CPU and memory they hold) can pile up; when all are taken, a render
// waits for one (or for its own context).
var jsonnetSlots = make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))

// renderJsonnet renders a directory source the way Argo CD does when it
// holds Jsonnet: every *.jsonnet file is evaluated (and every YAML or JSON
// file parsed) in path order, honouring recurse, include and exclude; the
// options are source.directory.jsonnet. A file evaluates to an object, a
// List or an array of objects (nested arrays are flattened).
func (r *Renderer) renderJsonnet(ctx context.Context, in toolInput) ([]*unstructured.Unstructured, error) {
	opts := appspec.Directory{}
	if in.Source.Directory != nil {
		opts = *in.Source.Directory
	}
	jopts := appspec.Jsonnet{}
	if opts.Jsonnet != nil {
		jopts = *opts.Jsonnet
	}
	imp, err := newJsonnetImporter(in, jopts.Libs)
	if err != nil {
		return nil, err
	}
	// An evaluation abandoned on ctx's end may still import: it then
	// fails on the closed root.
	defer imp.repo.Close()
	files, err := manifestFiles(imp.repo.dir, in.Dir, opts)
	if err != nil {
		return nil, err
	}
	env := newBuildEnv(in)
	var out []*unstructured.Unstructured
	for _, rel := range files {
		var objs []*unstructured.Unstructured
		if strings.HasSuffix(rel, ".jsonnet") {
			var js string
			if js, err = evalJsonnet(ctx, imp, rel, jopts, env); err == nil {
				objs, err = jsonnetObjects(rel, js)
			}
		} else {
			objs, err = parseManifestFile(imp.repo, rel)
		}
		if err != nil {
			return nil, err
		}
		if out, err = addObjects(out, objs); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// hasJsonnet says whether the files of dir that opts select hold a
// Jsonnet file.
func hasJsonnet(root, dir string, opts appspec.Directory) bool {
	files, err := manifestFiles(root, dir, opts)
	return err == nil && slices.ContainsFunc(files, func(f string) bool { return strings.HasSuffix(strings.ToLower(f), ".jsonnet") })
}

// manifestFiles lists the .jsonnet, .yaml, .yml and .json files of dir
// as paths relative to root (a real path), sorted. Subdirectories count
// only with recurse (hidden ones never); include and exclude match the
// path relative to dir. Reading them is the repoRoot's to check.
func manifestFiles(root, dir string, opts appspec.Directory) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && p != dir && (!opts.Recurse || strings.HasPrefix(d.Name(), ".")):
			return filepath.SkipDir
		case d.IsDir():
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch strings.ToLower(path.Ext(rel)) {
		case ".jsonnet", ".yaml", ".yml", ".json":
		default:
			return nil
		}
		if (opts.Include != "" && !matchAny(opts.Include, rel)) || (opts.Exclude != "" && matchAny(opts.Exclude, rel)) {
			return nil
		}
		inRoot, _ := filepath.Rel(root, p)
		files = append(files, filepath.ToSlash(inRoot))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk %s: %w", filepath.Base(dir), err)
	}
	sort.Strings(files)
	return files, nil
}

// parseManifestFile parses a YAML or JSON file (rel to the root).
func parseManifestFile(repo *repoRoot, rel string) ([]*unstructured.Unstructured, error) {
	b, err := repo.readFile(rel)
	if err != nil {
		return nil, err
	}
	return manifest.Parse(rel, b)
}

// evalJsonnet evaluates file (relative to the checkout root) with the
// spec's variables, in a goroutine so that the render returns when ctx
// ends (see jsonnetSlots).
func evalJsonnet(ctx context.Context, imp *jsonnetImporter, file string, o appspec.Jsonnet, env buildEnv) (string, error) {
	vm := jsonnet.MakeVM()
	vm.MaxStack = jsonnetMaxStack
	vm.Importer(imp)
	for _, v := range o.TLAs {
		if v.Code {
			vm.TLACode(v.Name, env.subst(v.Value))
		} else {
			vm.TLAVar(v.Name, env.subst(v.Value))
		}
	}
	for _, v := range o.ExtVars {
		if v.Code {
			vm.ExtCode(v.Name, env.subst(v.Value))
		} else {
			vm.ExtVar(v.Name, env.subst(v.Value))
		}
	}
	select {
	case jsonnetSlots <- struct{}{}:
	case <-ctx.Done():
		return "", fmt.Errorf("jsonnet %s: %w", file, context.Cause(ctx))
	}
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() { <-jsonnetSlots }()
		out, err := vm.EvaluateFile(file)
		done <- result{out, err}
	}()
	select {
	case <-ctx.Done():
		return "", fmt.Errorf("jsonnet %s: %w", file, context.Cause(ctx))
	case res := <-done:
		if res.err != nil {
			if v := imp.violation(); v != nil {
				return "", v
			}
			return "", fmt.Errorf("%w: %s", ErrJsonnet, strings.TrimSpace(res.err.Error()))
		}
		if len(res.out) > maxJsonnetOutput {
			return "", fmt.Errorf("%w: %s evaluates to %d bytes, more than the limit of %d", ErrJsonnet, file, len(res.out), maxJsonnetOutput)
		}
		return res.out, nil
	}
}

// jsonnetObjects reads the objects of an evaluation: an object (or a
// List), or an array of them, flattened.
func jsonnetObjects(name, js string) ([]*unstructured.Unstructured, error) {
	var arr []json.RawMessage
	if err := json.Unmarshal([]byte(js), &arr); err != nil {
		return manifest.Parse(name, []byte(js))
	}
	var out []*unstructured.Unstructured
	for i, item := range arr {
		objs, err := jsonnetObjects(fmt.Sprintf("%s[%d]", name, i), string(item))
		if err != nil {
			return nil, err
		}
		if out, err = addObjects(out, objs); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// jsonnetImporter imports files from inside the checkout only. Paths are
// relative to the checkout root, in slash form (so that messages name no
// worker path): an import is looked up next to the importing file, then in
// the library paths (the app directory, then the spec's libs; the last one
// wins, as with jsonnet -J). Absolute imports, imports that climb out of
// the root and symlinks that lead out of it are refused.
type jsonnetImporter struct {
	repo   *repoRoot
	jpaths []string // relative to root
	mu     sync.Mutex
	cache  map[string]*jsonnetFile
	denied error
}

type jsonnetFile struct {
	contents jsonnet.Contents
	exists   bool
}

var _ jsonnet.Importer = (*jsonnetImporter)(nil)

func newJsonnetImporter(in toolInput, libs []string) (*jsonnetImporter, error) {
	_, appRel, err := checkoutPaths(in)
	if err != nil {
		return nil, err
	}
	repo, err := openRepoRoot(in.Root, in.Limit)
	if err != nil {
		return nil, err
	}
	imp := &jsonnetImporter{repo: repo, jpaths: []string{filepath.ToSlash(appRel)}, cache: map[string]*jsonnetFile{}}
	for _, lib := range libs {
		if err := appspec.ValidRepoPath(lib); err != nil || lib == "" {
			repo.Close()
			return nil, fmt.Errorf("%w: jsonnet lib %q must be a path inside the repository", ErrBadPath, lib)
		}
		clean := path.Clean(strings.TrimPrefix(lib, "./"))
		if _, err := repo.stat(clean); errors.Is(err, errLeaves) {
			repo.Close()
			return nil, fmt.Errorf("%w: jsonnet lib %q leads out of the repository", ErrBadPath, lib)
		}
		imp.jpaths = append(imp.jpaths, clean)
	}
	return imp, nil
}

// Import implements jsonnet.Importer.
func (im *jsonnetImporter) Import(importedFrom, importedPath string) (jsonnet.Contents, string, error) {
	im.mu.Lock()
	defer im.mu.Unlock()
	if path.IsAbs(importedPath) || filepath.IsAbs(importedPath) {
		return jsonnet.Contents{}, "", im.deny(fmt.Errorf("%w: jsonnet import %q: absolute imports are not allowed", ErrBadPath, importedPath))
	}
	dirs := []string{"."} // the entry file is named relative to the root
	if importedFrom != "" {
		dirs = []string{path.Dir(importedFrom)}
		for i := len(im.jpaths) - 1; i >= 0; i-- {
			dirs = append(dirs, im.jpaths[i])
		}
	}
	for _, dir := range dirs {
		rel := path.Join(dir, importedPath)
		f, err := im.load(rel, importedPath)
		if err != nil {
			return jsonnet.Contents{}, "", err
		}
		if f.exists {
			return f.contents, rel, nil
		}
	}
	return jsonnet.Contents{}, "", fmt.Errorf("couldn't open import %q: no match locally or in the Jsonnet library paths", importedPath)
}

// load reads rel (relative to the root), cached, refusing paths that
// lead out of the root.
func (im *jsonnetImporter) load(rel, asked string) (*jsonnetFile, error) {
	if f, ok := im.cache[rel]; ok {
		return f, nil
	}
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, im.deny(fmt.Errorf("%w: jsonnet import %q leaves the repository", ErrBadPath, asked))
	}
	f := &jsonnetFile{}
	b, err := im.repo.readFile(rel)
	switch {
	case errors.Is(err, ErrPathNotFound):
	case err != nil:
		return nil, im.deny(fmt.Errorf("jsonnet import %q: %w", asked, err))
	default:
		f.contents, f.exists = jsonnet.MakeContentsRaw(b), true
	}
	im.cache[rel] = f
	return f, nil
}

// deny records the first refused import: go-jsonnet flattens errors to
// text, so the render reports this one instead.
func (im *jsonnetImporter) deny(err error) error {
	if im.denied == nil {
		im.denied = err
	}
	return err
}

func (im *jsonnetImporter) violation() error {
	im.mu.Lock()
	defer im.mu.Unlock()
	return im.denied
}
