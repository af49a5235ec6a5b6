package appsets

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/itchyny/gojq"

	"github.com/windlass-cd/windlass/internal/appset"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// jqTimeout bounds one jq expression over one app; jqMaxPaths bounds the
// paths it may select.
const (
	jqTimeout  = time.Second
	jqMaxPaths = 10000
)

// ignoreRule is one ignoreApplicationDifferences entry, its pointers
// turned into paths of Windlass's app spec and its jq expressions
// compiled.
type ignoreRule struct {
	name  string
	paths [][]string
	jq    []jqPath
}

// jqPath is one compiled jqPathExpressions entry: path(<expr>).
type jqPath struct {
	field string
	code  *gojq.Code
}

// ignoredPointers reads the set's ignoreApplicationDifferences. Argo CD's
// pointers and jq paths address the Application resource: /spec/X is X
// of Windlass's spec, /metadata/labels and /metadata/annotations its
// labels and annotations.
func ignoredPointers(ds []appset.IgnoreDifference) ([]ignoreRule, error) {
	var out []ignoreRule
	for i, d := range ds {
		r := ignoreRule{name: d.Name}
		for _, p := range d.JSONPointers {
			path, err := specPath(p)
			if err != nil {
				return nil, fmt.Errorf("spec.ignoreApplicationDifferences[%d].jsonPointers: %w", i, err)
			}
			r.paths = append(r.paths, path)
		}
		for j, e := range d.JQPathExpressions {
			field := fmt.Sprintf("spec.ignoreApplicationDifferences[%d].jqPathExpressions[%d]", i, j)
			q, err := gojq.Parse("path(" + e + ")")
			if err != nil {
				return nil, fmt.Errorf("%s: %q: %w", field, e, err)
			}
			code, err := gojq.Compile(q)
			if err != nil {
				return nil, fmt.Errorf("%s: %q: %w", field, e, err)
			}
			r.jq = append(r.jq, jqPath{field: field, code: code})
		}
		out = append(out, r)
	}
	return out, nil
}

// resourceView is an app in the Application resource's shape, over
// which jq expressions run: its spec, and its name, labels and
// annotations under metadata.
func resourceView(v any) map[string]any {
	spec, _ := v.(map[string]any)
	meta := map[string]any{}
	for _, k := range []string{"name", "labels", "annotations"} {
		if x, ok := spec[k]; ok {
			meta[k] = x
		}
	}
	return map[string]any{"metadata": meta, "spec": spec}
}

// selectPaths runs the expression over the app's resource view and maps
// each path it selects to a path of the spec.
func (j jqPath) selectPaths(ctx context.Context, app any) ([][]string, error) {
	ctx, cancel := context.WithTimeout(ctx, jqTimeout)
	defer cancel()
	iter := j.code.RunWithContext(ctx, resourceView(app))
	var out [][]string
	for {
		v, ok := iter.Next()
		if !ok {
			return out, nil
		}
		if err, ok := v.(error); ok {
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, fmt.Errorf("%s: took more than %s", j.field, jqTimeout)
			}
			return nil, fmt.Errorf("%s: %w", j.field, err)
		}
		steps, _ := v.([]any)
		parts := make([]string, 0, len(steps))
		for _, s := range steps {
			switch t := s.(type) {
			case string:
				parts = append(parts, t)
			case int:
				parts = append(parts, strconv.Itoa(t))
			default:
				return nil, fmt.Errorf("%s: selects a path through %v, not a key or an index", j.field, s)
			}
		}
		p, err := viewPath(parts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", j.field, err)
		}
		if p == nil {
			continue // the root selects nothing to keep
		}
		if out = append(out, p); len(out) > jqMaxPaths {
			return nil, fmt.Errorf("%s: selects more than %d paths", j.field, jqMaxPaths)
		}
	}
}

// viewPath maps a path of the resource view to a path of the spec.
func viewPath(parts []string) ([]string, error) {
	switch {
	case len(parts) == 0:
		return nil, nil
	case parts[0] == "spec" && len(parts) > 1:
		return parts[1:], nil
	case parts[0] == "metadata" && len(parts) > 1 && (parts[1] == "labels" || parts[1] == "annotations"):
		return parts[1:], nil
	}
	return nil, fmt.Errorf(".%s: only .spec..., .metadata.labels and .metadata.annotations can be ignored", strings.Join(parts, "."))
}

// specPath maps an Application pointer to a path of appspec.Application.
func specPath(p string) ([]string, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("%q: a JSON pointer starts with /", p)
	}
	var parts []string
	for s := range strings.SplitSeq(p[1:], "/") {
		parts = append(parts, strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~"))
	}
	switch {
	case parts[0] == "spec" && len(parts) > 1:
		return parts[1:], nil
	case parts[0] == "metadata" && len(parts) > 1 && (parts[1] == "labels" || parts[1] == "annotations"):
		return parts[1:], nil
	}
	return nil, fmt.Errorf("%q: only /spec/..., /metadata/labels and /metadata/annotations can be ignored", p)
}

// preserve keeps in desired the live values of the fields the set
// ignores, and the live labels and annotations of preservedFields.
func preserve(ctx context.Context, live, desired appspec.Application, rules []ignoreRule, pf *appset.PreservedFields) (appspec.Application, error) {
	if pf != nil {
		desired.Labels = keepKeys(live.Labels, desired.Labels, pf.Labels)
		desired.Annotations = keepKeys(live.Annotations, desired.Annotations, pf.Annotations)
	}
	var paths [][]string
	var jqs []jqPath
	for _, r := range rules {
		if r.name == "" || r.name == desired.Name {
			paths = append(paths, r.paths...)
			jqs = append(jqs, r.jq...)
		}
	}
	if len(paths) == 0 && len(jqs) == 0 {
		return desired, nil
	}
	lv, err := generic(live)
	if err != nil {
		return desired, err
	}
	dv, err := generic(desired)
	if err != nil {
		return desired, err
	}
	// A jq path selected in either app is kept as live has it: its live
	// value, or absent when live lacks it.
	for _, j := range jqs {
		for _, app := range []any{lv, dv} {
			ps, err := j.selectPaths(ctx, app)
			if err != nil {
				return desired, err
			}
			paths = append(paths, ps...)
		}
	}
	for _, p := range paths {
		v, ok := lookup(lv, p)
		if dv, err = setPath(dv, p, v, ok); err != nil {
			return desired, err
		}
	}
	var out appspec.Application
	if err := remarshal(dv, &out); err != nil {
		return desired, err
	}
	// Ownership is the set's, whatever the live app says.
	out.ManagedBy, out.Name, out.Project = desired.ManagedBy, desired.Name, desired.Project
	return out, nil
}

// lookup reads the value at path.
func lookup(v any, path []string) (any, bool) {
	for _, k := range path {
		switch t := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = t[k]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(t) {
				return nil, false
			}
			v = t[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// setPath sets (present) or removes (absent) the value at path, making
// the objects on the way.
func setPath(root any, path []string, val any, present bool) (any, error) {
	if len(path) == 0 {
		if present {
			return val, nil
		}
		return nil, nil
	}
	k := path[0]
	switch t := root.(type) {
	case nil:
		if !present {
			return nil, nil
		}
		child, err := setPath(nil, path[1:], val, present)
		return map[string]any{k: child}, err
	case map[string]any:
		if len(path) == 1 && !present {
			delete(t, k)
			return t, nil
		}
		child, err := setPath(t[k], path[1:], val, present)
		t[k] = child
		return t, err
	case []any:
		i, err := strconv.Atoi(k)
		if err != nil || i < 0 || i >= len(t) {
			return t, nil // an element the desired list lacks is not added
		}
		child, err := setPath(t[i], path[1:], val, present)
		t[i] = child
		return t, err
	}
	return root, fmt.Errorf("/%s: not an object or list", strings.Join(path, "/"))
}
