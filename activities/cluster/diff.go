package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/itchyny/gojq"
	"github.com/pmezard/go-difflib/difflib"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// How the diff works: the desired object is server-side applied as a dry
// run (field manager windlass, force) and the result is compared with the
// live object after both are normalised: managedFields, resourceVersion,
// uid, generation, creationTimestamp, status and the last-applied
// annotation are dropped, then every field an ignoreDifferences rule names
// (the app's and the system-wide ones that match the resource).

const (
	// maxDiffBytes caps one resource's unified diff.
	maxDiffBytes = 64 << 10
	// jqTimeout bounds one jq path expression on one object.
	jqTimeout = time.Second
)

// ignoreSet is the ignoreDifferences of one resource, compiled.
type ignoreSet struct {
	pointers [][]string
	jq       []*gojq.Code
	managers []string
}

func (s ignoreSet) empty() bool { return len(s.pointers)+len(s.jq)+len(s.managers) == 0 }

// jqCache holds compiled jq path expressions by source.
type jqCache struct{ m sync.Map }

type jqEntry struct {
	code *gojq.Code
	err  error
}

func (c *jqCache) compile(expr string) (*gojq.Code, error) {
	if e, ok := c.m.Load(expr); ok {
		return e.(jqEntry).code, e.(jqEntry).err
	}
	var e jqEntry
	q, err := gojq.Parse("path(" + expr + ")")
	if err == nil {
		e.code, err = gojq.Compile(q)
	}
	if err != nil {
		e.err = fmt.Errorf("jq path expression %q: %w", expr, err)
	}
	c.m.Store(expr, e)
	return e.code, e.err
}

// ignoreSetOf compiles rules. Broken entries are left out and reported in
// the error; the rest still apply.
func (a *Activities) ignoreSetOf(rules []appspec.ResourceIgnoreDifferences) (ignoreSet, error) {
	var s ignoreSet
	var errs []error
	for _, r := range rules {
		for _, p := range r.JSONPointers {
			toks, err := parsePointer(p)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			s.pointers = append(s.pointers, toks)
		}
		for _, expr := range r.JQPathExpressions {
			code, err := a.jq.compile(expr)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			s.jq = append(s.jq, code)
		}
		s.managers = append(s.managers, r.ManagedFieldsManagers...)
	}
	return s, errors.Join(errs...)
}

// ignoreFor returns the compiled rules that match a resource.
func (a *Activities) ignoreFor(t Target, k appspec.ResourceKey) (ignoreSet, error) {
	var rules []appspec.ResourceIgnoreDifferences
	for _, r := range slices.Concat(a.ignore, t.IgnoreDifferences) {
		if r.Matches(k) {
			rules = append(rules, r)
		}
	}
	return a.ignoreSetOf(rules)
}

func parsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, errors.New("json pointer is empty")
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("json pointer %q does not start with /", p)
	}
	toks := strings.Split(p[1:], "/")
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks, nil
}

// paths returns the concrete paths (strings for object keys, ints for list
// indices) in obj that the set names; managed are the live object's
// managedFields, whose entries of the set's managers name fields.
func (s ignoreSet) paths(obj map[string]any, managed []metav1.ManagedFieldsEntry) [][]any {
	var out [][]any
	for _, toks := range s.pointers {
		if p, ok := resolvePointer(obj, toks); ok {
			out = append(out, p)
		}
	}
	if len(s.jq) > 0 {
		in := toJQ(obj)
		for _, code := range s.jq {
			out = append(out, jqPaths(code, in)...)
		}
	}
	for _, e := range managed {
		if e.FieldsV1 == nil || !slices.Contains(s.managers, e.Manager) {
			continue
		}
		var fields map[string]any
		if json.Unmarshal(e.FieldsV1.GetRawBytes(), &fields) == nil {
			walkFields(fields, obj, nil, &out)
		}
	}
	return out
}

func resolvePointer(obj map[string]any, toks []string) ([]any, bool) {
	var cur any = obj
	p := make([]any, 0, len(toks))
	for _, t := range toks {
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[t]
			if !ok {
				return nil, false
			}
			p, cur = append(p, t), v
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			p, cur = append(p, i), x[i]
		default:
			return nil, false
		}
	}
	return p, true
}

func jqPaths(code *gojq.Code, in any) [][]any {
	ctx, cancel := context.WithTimeout(context.Background(), jqTimeout)
	defer cancel()
	var out [][]any
	iter := code.RunWithContext(ctx, in)
	for {
		v, ok := iter.Next()
		if !ok {
			return out
		}
		p, ok := v.([]any)
		if !ok { // an error (not a path expression, timeout): ignore the rest
			return out
		}
		out = append(out, p)
	}
}

// toJQ copies an unstructured value into the types gojq accepts.
func toJQ(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = toJQ(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = toJQ(e)
		}
		return s
	case int64:
		return int(x)
	case int32:
		return int(x)
	}
	return v
}

// walkFields collects the paths a managedFields fieldsV1 set names in obj:
// f:<name> is an object field, k:<json> the list item with those key
// fields, v:<json> the list item with that value, i:<n> an index. A field
// whose set names nothing below it is owned whole.
func walkFields(fields map[string]any, obj any, prefix []any, out *[][]any) {
	for k, child := range fields {
		if k == "." {
			continue
		}
		sub, _ := child.(map[string]any)
		var p []any
		var next any
		switch {
		case strings.HasPrefix(k, "f:"):
			m, ok := obj.(map[string]any)
			v, found := m[k[2:]]
			if !ok || !found {
				continue
			}
			p, next = append(slices.Clone(prefix), k[2:]), v
		case strings.HasPrefix(k, "k:"), strings.HasPrefix(k, "v:"), strings.HasPrefix(k, "i:"):
			list, ok := obj.([]any)
			if !ok {
				continue
			}
			i := listIndex(list, k)
			if i < 0 {
				continue
			}
			p, next = append(slices.Clone(prefix), i), list[i]
		default:
			continue
		}
		if ownsWhole(sub) {
			*out = append(*out, p)
		} else {
			walkFields(sub, next, p, out)
		}
	}
}

func ownsWhole(sub map[string]any) bool {
	for k := range sub {
		if k != "." {
			return false
		}
	}
	return true
}

func listIndex(list []any, k string) int {
	switch k[:2] {
	case "i:":
		i, err := strconv.Atoi(k[2:])
		if err != nil || i < 0 || i >= len(list) {
			return -1
		}
		return i
	case "v:":
		var want any
		if json.Unmarshal([]byte(k[2:]), &want) != nil {
			return -1
		}
		for i, item := range list {
			if jsonEqual(item, want) {
				return i
			}
		}
	case "k:":
		var keys map[string]any
		if json.Unmarshal([]byte(k[2:]), &keys) != nil {
			return -1
		}
		for i, item := range list {
			m, ok := item.(map[string]any)
			if ok && matchesKeys(m, keys) {
				return i
			}
		}
	}
	return -1
}

func matchesKeys(item, keys map[string]any) bool {
	for k, v := range keys {
		if !jsonEqual(item[k], v) {
			return false
		}
	}
	return true
}

// jsonEqual compares values decoded by different JSON decoders (int64 or
// float64 numbers).
func jsonEqual(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// comparePaths orders paths element by element (ints before strings).
func comparePaths(a, b []any) int {
	for i := range min(len(a), len(b)) {
		ia, aInt := a[i].(int)
		ib, bInt := b[i].(int)
		switch {
		case aInt && bInt:
			if c := cmp.Compare(ia, ib); c != 0 {
				return c
			}
		case aInt != bInt:
			if aInt {
				return -1
			}
			return 1
		default:
			if c := cmp.Compare(fmt.Sprint(a[i]), fmt.Sprint(b[i])); c != 0 {
				return c
			}
		}
	}
	return cmp.Compare(len(a), len(b))
}

// removePaths deletes paths from obj, last first so that removing a list
// item does not shift the indices of the others.
func removePaths(obj map[string]any, paths [][]any) {
	slices.SortFunc(paths, func(a, b []any) int { return comparePaths(b, a) })
	for _, p := range paths {
		deletePath(obj, p)
	}
}

func deletePath(v any, p []any) any {
	if len(p) == 0 {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		k, ok := p[0].(string)
		if !ok {
			return v
		}
		if len(p) == 1 {
			delete(x, k)
		} else if c, ok := x[k]; ok {
			x[k] = deletePath(c, p[1:])
		}
		return x
	case []any:
		i, ok := p[0].(int)
		if !ok || i < 0 || i >= len(x) {
			return v
		}
		if len(p) == 1 {
			return append(x[:i:i], x[i+1:]...)
		}
		x[i] = deletePath(x[i], p[1:])
		return x
	}
	return v
}

func getPath(v any, p []any) (any, bool) {
	for _, e := range p {
		switch x := v.(type) {
		case map[string]any:
			k, _ := e.(string)
			c, ok := x[k]
			if !ok {
				return nil, false
			}
			v = c
		case []any:
			i, ok := e.(int)
			if !ok || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// setPath sets p in v to val, making objects on the way; list indices must
// exist. It returns the new v.
func setPath(v any, p []any, val any) any {
	if len(p) == 0 {
		return val
	}
	switch e := p[0].(type) {
	case string:
		m, ok := v.(map[string]any)
		if !ok {
			if v != nil {
				return v
			}
			m = map[string]any{}
		}
		m[e] = setPath(m[e], p[1:], val)
		return m
	case int:
		list, ok := v.([]any)
		if !ok || e < 0 || e >= len(list) {
			return v
		}
		list[e] = setPath(list[e], p[1:], val)
		return list
	}
	return v
}

// normalize returns a copy of o without the fields that differ without a
// change of intent and without the ignored ones; managed are the live
// object's managedFields.
func normalize(o *unstructured.Unstructured, managed []metav1.ManagedFieldsEntry, s ignoreSet) map[string]any {
	c := o.DeepCopy()
	for _, f := range []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp", "selfLink"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(c.Object, "metadata", "annotations", corev1.LastAppliedConfigAnnotation)
	unstructured.RemoveNestedField(c.Object, "status")
	if !s.empty() {
		removePaths(c.Object, s.paths(c.Object, managed))
	}
	for _, f := range []string{"annotations", "labels"} {
		if m, found, _ := unstructured.NestedMap(c.Object, "metadata", f); found && len(m) == 0 {
			unstructured.RemoveNestedField(c.Object, "metadata", f)
		}
	}
	return c.Object
}

// respectIgnored returns a copy of desired in which the ignored fields
// have the live values (RespectIgnoreDifferences=true): a field the live
// object has is copied, one it lacks is removed. jq and manager paths are
// resolved in the live object, so a list whose items differ in order
// between desired and live may take the value of another item.
func respectIgnored(desired, live *unstructured.Unstructured, s ignoreSet) *unstructured.Unstructured {
	out := desired.DeepCopy()
	managed := live.GetManagedFields()
	for _, p := range s.paths(live.Object, managed) {
		if v, ok := getPath(live.Object, p); ok {
			out.Object = setPath(out.Object, p, runtimeDeepCopy(v)).(map[string]any)
		}
	}
	var gone [][]any
	for _, p := range s.paths(out.Object, managed) {
		if _, ok := getPath(live.Object, p); !ok {
			gone = append(gone, p)
		}
	}
	removePaths(out.Object, gone)
	return out
}

func runtimeDeepCopy(v any) any {
	return (&unstructured.Unstructured{Object: map[string]any{"v": v}}).DeepCopy().Object["v"]
}

// secretSafeDiff is unifiedDiff of normalised objects with the values of
// Secrets masked (manifest.MaskSecrets): a diff is shown to people and
// may be stored, and a Secret's values must never appear in it. It
// modifies live and desired.
func secretSafeDiff(live, desired map[string]any) string {
	manifest.MaskSecrets(live, desired)
	return unifiedDiff(live, desired)
}

// unifiedDiff renders live (---) and desired (+++) as YAML and diffs them;
// a nil side is empty. It returns "" when they are equal.
func unifiedDiff(live, desired map[string]any) string {
	a, b := yamlLines(live), yamlLines(desired)
	if slices.Equal(a, b) {
		return ""
	}
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: a, B: b, FromFile: "live", ToFile: "desired", Context: 3})
	if err != nil {
		return ""
	}
	if len(d) > maxDiffBytes {
		cut := strings.LastIndexByte(d[:maxDiffBytes], '\n') + 1
		d = d[:cut] + "... diff truncated\n"
	}
	return d
}

func yamlLines(m map[string]any) []string {
	if m == nil {
		return nil
	}
	y, err := yaml.Marshal(m)
	if err != nil {
		return []string{err.Error()}
	}
	lines := strings.SplitAfter(string(y), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
