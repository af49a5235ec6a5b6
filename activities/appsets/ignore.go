package appsets

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/windlass-cd/windlass/internal/appset"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// errJQ: jqPathExpressions are not built.
var errJQ = errors.New("jqPathExpressions are not implemented; use jsonPointers")

// ignoreRule is one ignoreApplicationDifferences entry, its pointers
// turned into paths of Windlass's app spec.
type ignoreRule struct {
	name  string
	paths [][]string
}

// ignoredPointers reads the set's ignoreApplicationDifferences. Argo CD's
// pointers address the Application resource: /spec/X is X of Windlass's
// spec, /metadata/labels and /metadata/annotations its labels and
// annotations.
func ignoredPointers(ds []appset.IgnoreDifference) ([]ignoreRule, error) {
	var out []ignoreRule
	for i, d := range ds {
		if len(d.JQPathExpressions) > 0 {
			return nil, fmt.Errorf("spec.ignoreApplicationDifferences[%d]: %w", i, errJQ)
		}
		r := ignoreRule{name: d.Name}
		for _, p := range d.JSONPointers {
			path, err := specPath(p)
			if err != nil {
				return nil, fmt.Errorf("spec.ignoreApplicationDifferences[%d].jsonPointers: %w", i, err)
			}
			r.paths = append(r.paths, path)
		}
		out = append(out, r)
	}
	return out, nil
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
func preserve(live, desired appspec.Application, rules []ignoreRule, pf *appset.PreservedFields) (appspec.Application, error) {
	if pf != nil {
		desired.Labels = keepKeys(live.Labels, desired.Labels, pf.Labels)
		desired.Annotations = keepKeys(live.Annotations, desired.Annotations, pf.Annotations)
	}
	var paths [][]string
	for _, r := range rules {
		if r.name == "" || r.name == desired.Name {
			paths = append(paths, r.paths...)
		}
	}
	if len(paths) == 0 {
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
