package appset

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"sigs.k8s.io/yaml"
)

// gitParams yields a repository's directories or files.
func (ev *evaluation) gitParams(ctx context.Context, g *GitGenerator, field string) ([]Params, error) {
	if ev.g.git == nil {
		return nil, fmt.Errorf("%w: git generator: no Git reader is configured", ErrUnavailable)
	}
	rev := g.Revision
	if rev == "" {
		rev = "HEAD"
	}
	dir, err := ev.g.git.Tree(ctx, g.RepoURL, rev)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrSource, field, err)
	}
	var out []Params
	if len(g.Directories) > 0 {
		out, err = ev.gitDirectories(dir, g)
	} else {
		out, err = ev.gitFiles(dir, g, field)
	}
	if err != nil {
		return nil, err
	}
	for i, p := range out {
		if out[i], err = p.withValues(g.Values, ev.r); err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
	}
	return out, nil
}

// walk lists the repository's directories or files (slash paths, in
// lexical order), skipping hidden ones such as .git.
func walk(root string, dirs bool) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if d.IsDir() == dirs && (dirs || d.Type().IsRegular()) {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out, err
}

// selected says whether p matches an included glob and no excluded one.
func selected(globs []GitPath, p string) (bool, error) {
	in := false
	for _, g := range globs {
		ok, err := doublestar.Match(strings.TrimPrefix(g.Path, "/"), p)
		if err != nil {
			return false, invalid("path", "%q: %v", g.Path, err)
		}
		if ok && g.Exclude {
			return false, nil
		}
		in = in || ok
	}
	return in, nil
}

func (ev *evaluation) gitDirectories(root string, g *GitGenerator) ([]Params, error) {
	dirs, err := walk(root, true)
	if err != nil {
		return nil, fmt.Errorf("%w: read directories: %w", ErrSource, err)
	}
	var out []Params
	for _, d := range dirs {
		ok, err := selected(g.Directories, d)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, ev.pathParams(Params{}, d, "", g.PathParamPrefix))
		}
	}
	return out, nil
}

func (ev *evaluation) gitFiles(root string, g *GitGenerator, field string) ([]Params, error) {
	files, err := walk(root, false)
	if err != nil {
		return nil, fmt.Errorf("%w: read files: %w", ErrSource, err)
	}
	var out []Params
	for _, f := range files {
		ok, err := selected(g.Files, f)
		if err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return nil, fmt.Errorf("%w: read %s: %w", ErrSource, f, err)
		}
		elems, err := fileElements(data)
		if err != nil {
			return nil, invalid(field, "file %s: %v", f, err)
		}
		for _, e := range elems {
			p := Params(e)
			if !ev.r.goTemplate {
				p = flatParams(e)
			}
			out = append(out, ev.pathParams(p, path.Dir(f), path.Base(f), g.PathParamPrefix))
		}
	}
	return out, nil
}

// fileElements reads a JSON or YAML file: an object is one element, a
// list one per item.
func fileElements(data []byte) ([]map[string]any, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(js, &v); err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case map[string]any:
		return []map[string]any{v}, nil
	case []any:
		out := make([]map[string]any, 0, len(v))
		for i, e := range v {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("item %d is not an object", i)
			}
			out = append(out, m)
		}
		return out, nil
	case nil:
		return nil, nil
	}
	return nil, fmt.Errorf("want an object or a list of objects, got %T", v)
}

// flatParams is a file's content as fasttemplate sees it, by dotted keys.
func flatParams(m map[string]any) Params {
	out := Params{}
	for k, v := range Params(m).flat() {
		out[k] = v
	}
	return out
}

// pathParams adds the path parameters of dir (and of file, for the files
// generator), under prefix if set.
func (ev *evaluation) pathParams(p Params, dir, file, prefix string) Params {
	if dir == "." {
		dir = ""
	}
	base := path.Base(dir)
	if dir == "" {
		base = ""
	}
	segments := strings.Split(dir, "/")
	if dir == "" {
		segments = nil
	}
	name := "path"
	if prefix != "" {
		name = prefix + ".path"
	}
	if ev.r.goTemplate {
		pv := map[string]any{"path": dir, "basename": base, "basenameNormalized": normalize(base), "segments": toAny(segments)}
		if file != "" {
			pv["filename"] = file
			pv["filenameNormalized"] = normalize(file)
		}
		if prefix != "" {
			p[prefix] = map[string]any{"path": pv}
		} else {
			p["path"] = pv
		}
		return p
	}
	p[name] = dir
	p[name+".basename"] = base
	p[name+".basenameNormalized"] = normalize(base)
	if file != "" {
		p[name+".filename"] = file
		p[name+".filenameNormalized"] = normalize(file)
	}
	for i, s := range segments {
		p[name+"["+strconv.Itoa(i)+"]"] = s
	}
	return p
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
