package appset

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Params is one parameter set: what a template renders against. Values
// nest; fasttemplate placeholders name them by dotted paths.
type Params map[string]any

// flat is the fasttemplate view of p: nested maps by dotted keys, lists
// also by key[i], and every leaf as a string (JSON for non-strings).
func (p Params) flat() map[string]string {
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				walk(join(prefix, k), e)
			}
			return
		case Params:
			walk(prefix, map[string]any(v))
			return
		case map[string]string:
			for k, e := range v {
				out[join(prefix, k)] = e
			}
			return
		case []string:
			for i, e := range v {
				out[prefix+"["+strconv.Itoa(i)+"]"] = e
			}
		}
		out[prefix] = leaf(v)
	}
	for k, v := range p {
		walk(k, v)
	}
	return out
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

func leaf(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case nil:
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// merged is p with q's parameters over it; nested maps merge.
func (p Params) merged(q Params) Params {
	out := deepCopy(map[string]any(p))
	mergeInto(out, map[string]any(q))
	return out
}

func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := asMap(v); ok {
			if dm, ok := asMap(dst[k]); ok {
				dm = deepCopy(dm)
				mergeInto(dm, sm)
				dst[k] = dm
				continue
			}
		}
		dst[k] = deepCopyValue(v)
	}
}

func asMap(v any) (map[string]any, bool) {
	switch v := v.(type) {
	case map[string]any:
		return v, true
	case Params:
		return v, true
	case Template:
		return v, true
	}
	return nil, false
}

func deepCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = deepCopyValue(v)
	}
	return out
}

func deepCopyValue(v any) any {
	if m, ok := asMap(v); ok {
		return deepCopy(m)
	}
	if l, ok := v.([]any); ok {
		c := make([]any, len(l))
		for i, e := range l {
			c[i] = deepCopyValue(e)
		}
		return c
	}
	return v
}

// withValues adds a generator's values under "values", rendering each
// string against p first as Argo CD does.
func (p Params) withValues(values map[string]any, r *renderer) (Params, error) {
	if len(values) == 0 {
		return p, nil
	}
	rendered := map[string]any{}
	for k, v := range values {
		s, ok := v.(string)
		if !ok {
			rendered[k] = v
			continue
		}
		out, err := r.renderString(s, p)
		if err != nil {
			return nil, fmt.Errorf("values.%s: %w", k, err)
		}
		rendered[k] = out
	}
	q := maps.Clone(p)
	q["values"] = rendered
	return q, nil
}

var (
	notNameChar = regexp.MustCompile(`[^a-z0-9.-]`)
	notSlugChar = regexp.MustCompile(`[^a-z0-9-]+`)
	dashes      = regexp.MustCompile(`-+`)
)

// normalize makes s usable in a Kubernetes name: lower case, other
// characters replaced by '-', at most 253 characters.
func normalize(s string) string {
	s = notNameChar.ReplaceAllString(strings.ToLower(s), "-")
	s = strings.Trim(s, "-.")
	if len(s) > 253 {
		s = strings.Trim(s[:253], "-.")
	}
	return s
}

// slugify is Argo CD's slugify: [maxSize [smartTruncate]] name. It lower
// cases, turns runs of other characters into one '-', and truncates to
// maxSize (default 50), at a '-' when smartTruncate (the default) allows.
func slugify(args ...any) (string, error) {
	if len(args) == 0 {
		return "", fmt.Errorf("slugify: a name is required")
	}
	maxSize, smart := 50, true
	name, ok := args[len(args)-1].(string)
	if !ok {
		return "", fmt.Errorf("slugify: the name must be a string, got %T", args[len(args)-1])
	}
	if len(args) > 1 {
		n, err := strconv.Atoi(fmt.Sprint(args[0]))
		if err != nil {
			return "", fmt.Errorf("slugify: maxSize %v: %w", args[0], err)
		}
		maxSize = n
	}
	if len(args) > 2 {
		b, err := strconv.ParseBool(fmt.Sprint(args[1]))
		if err != nil {
			return "", fmt.Errorf("slugify: smartTruncate %v: %w", args[1], err)
		}
		smart = b
	}
	s := notSlugChar.ReplaceAllString(strings.ToLower(name), "-")
	s = strings.Trim(dashes.ReplaceAllString(s, "-"), "-")
	if maxSize > 0 && len(s) > maxSize {
		cut := s[:maxSize]
		if i := strings.LastIndex(cut, "-"); smart && i > 0 && s[maxSize] != '-' {
			cut = cut[:i]
		}
		s = strings.Trim(cut, "-")
	}
	return s, nil
}

// matches says whether labels satisfy the selector; an empty selector
// matches everything.
func (s LabelSelector) matches(labels map[string]string) (bool, error) {
	for _, k := range slices.Sorted(maps.Keys(s.MatchLabels)) {
		if v, ok := labels[k]; !ok || v != s.MatchLabels[k] {
			return false, nil
		}
	}
	for _, r := range s.MatchExpressions {
		v, has := labels[r.Key]
		switch r.Operator {
		case "In":
			if !has || !slices.Contains(r.Values, v) {
				return false, nil
			}
		case "NotIn":
			if has && slices.Contains(r.Values, v) {
				return false, nil
			}
		case "Exists":
			if !has {
				return false, nil
			}
		case "DoesNotExist":
			if has {
				return false, nil
			}
		default:
			return false, fmt.Errorf("%w: selector operator %q: want In, NotIn, Exists or DoesNotExist", ErrInvalid, r.Operator)
		}
	}
	return true, nil
}

func (s LabelSelector) empty() bool {
	return len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0
}
