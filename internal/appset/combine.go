package appset

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// matrix yields every pair of the two generators' parameter sets. The
// second generator's spec may name the first one's parameters.
func (ev *evaluation) matrix(ctx context.Context, m *CombineGenerator, field string) ([]Params, error) {
	first, err := ev.eval(ctx, m.Generators[0], field+".generators[0]", nil)
	if err != nil {
		return nil, err
	}
	var out []Params
	for _, a := range first {
		second, err := ev.eval(ctx, m.Generators[1], field+".generators[1]", a)
		if err != nil {
			return nil, err
		}
		if len(out)+len(second) > ev.g.limit {
			return nil, fmt.Errorf("%w: %s yields more than the limit of %d elements", ErrTooManyElements, field, ev.g.limit)
		}
		for _, b := range second {
			p, err := ev.combine(a, b)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", field, err)
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// combine joins a matrix's two parameter sets. Go templates merge them;
// fasttemplate parameters must not disagree on a key.
func (ev *evaluation) combine(a, b Params) (Params, error) {
	if ev.r.goTemplate {
		return a.merged(b), nil
	}
	fa, fb := a.flat(), b.flat()
	out := Params{}
	for k, v := range fa {
		out[k] = v
	}
	for _, k := range slices.Sorted(maps.Keys(fb)) {
		if v, ok := fa[k]; ok && v != fb[k] {
			return nil, invalid("generators", "both generators set parameter %s, to %q and %q", k, v, fb[k])
		}
		out[k] = fb[k]
	}
	return out, nil
}

// merge yields the first generator's parameter sets, each overlaid by the
// sets of the later generators that agree with it on every merge key.
func (ev *evaluation) merge(ctx context.Context, m *CombineGenerator, field string) ([]Params, error) {
	base, err := ev.eval(ctx, m.Generators[0], field+".generators[0]", nil)
	if err != nil {
		return nil, err
	}
	index := map[string]int{}
	for i, p := range base {
		k, err := mergeKey(p, m.MergeKeys)
		if err != nil {
			return nil, fmt.Errorf("%s.generators[0] element %d: %w", field, i, err)
		}
		if j, dup := index[k]; dup {
			return nil, invalid(field+".generators[0]", "elements %d and %d have the same merge keys %s", j, i, k)
		}
		index[k] = i
	}
	for gi, gen := range m.Generators[1:] {
		f := fmt.Sprintf("%s.generators[%d]", field, gi+1)
		more, err := ev.eval(ctx, gen, f, nil)
		if err != nil {
			return nil, err
		}
		for _, p := range more {
			k, err := mergeKey(p, m.MergeKeys)
			if err != nil {
				continue // an element without the keys merges into nothing
			}
			if i, ok := index[k]; ok {
				if ev.r.goTemplate {
					base[i] = base[i].merged(p)
				} else {
					base[i] = flatParams(base[i]).merged(flatParams(p))
				}
			}
		}
	}
	return base, nil
}

// mergeKey is the values of the merge keys of p, as one string.
func mergeKey(p Params, keys []string) (string, error) {
	flat := p.flat()
	vals := make([]string, len(keys))
	for i, k := range keys {
		v, ok := flat[k]
		if !ok {
			return "", invalid("mergeKeys", "element has no parameter %s", k)
		}
		vals[i] = v
	}
	b, _ := json.Marshal(vals)
	return string(b), nil
}
