package resourcefilter

import (
	"fmt"

	"github.com/gobwas/glob"
)

// Rule is one entry of resource.exclusions or resource.inclusions.
type Rule struct {
	APIGroups []string `json:"apiGroups,omitempty"`
	Kinds     []string `json:"kinds,omitempty"`
	Clusters  []string `json:"clusters,omitempty"`
}

// Filter answers whether a kind is excluded on a cluster. Create it with New.
type Filter struct {
	exclusions, inclusions []rule
	rules                  [2][]Rule // as given, for Rules
}

// rule is a Rule with its globs compiled.
type rule struct {
	groups, kinds, clusters []glob.Glob
}

// New compiles the rules; a pattern that is not a valid glob is an error.
func New(exclusions, inclusions []Rule) (*Filter, error) {
	f := &Filter{rules: [2][]Rule{exclusions, inclusions}}
	var err error
	if f.exclusions, err = compile("resource.exclusions", exclusions); err != nil {
		return nil, err
	}
	if f.inclusions, err = compile("resource.inclusions", inclusions); err != nil {
		return nil, err
	}
	return f, nil
}

func compile(what string, rules []Rule) ([]rule, error) {
	out := make([]rule, len(rules))
	for i, r := range rules {
		var err error
		for _, p := range []struct {
			field string
			in    []string
			out   *[]glob.Glob
		}{{"apiGroups", r.APIGroups, &out[i].groups}, {"kinds", r.Kinds, &out[i].kinds}, {"clusters", r.Clusters, &out[i].clusters}} {
			if *p.out, err = globs(p.in); err != nil {
				return nil, fmt.Errorf("%s[%d].%s: %w", what, i, p.field, err)
			}
		}
	}
	return out, nil
}

func globs(patterns []string) ([]glob.Glob, error) {
	var out []glob.Glob
	for _, p := range patterns {
		g, err := glob.Compile(p) // no separators: "*" spans "/" and "."
		if err != nil {
			return nil, fmt.Errorf("pattern %q: %w", p, err)
		}
		out = append(out, g)
	}
	return out, nil
}

// Rules returns the rules f was made of.
func (f *Filter) Rules() (exclusions, inclusions []Rule) {
	if f == nil {
		return nil, nil
	}
	return f.rules[0], f.rules[1]
}

// Empty reports whether f excludes nothing.
func (f *Filter) Empty() bool {
	return f == nil || len(f.exclusions) == 0 && len(f.inclusions) == 0
}

// Excluded reports whether Windlass leaves the kind alone on the cluster
// (its API server URL). The core group is "".
func (f *Filter) Excluded(group, kind, cluster string) bool {
	if f.Empty() {
		return false
	}
	for _, r := range f.exclusions {
		if r.match(group, kind, cluster) {
			return true
		}
	}
	scoped := false // an inclusion names this cluster
	for _, r := range f.inclusions {
		if r.match(group, kind, cluster) {
			return false
		}
		scoped = scoped || matchAny(r.clusters, cluster)
	}
	return scoped
}

func (r rule) match(group, kind, cluster string) bool {
	return matchAny(r.groups, group) && matchAny(r.kinds, kind) && matchAny(r.clusters, cluster)
}

// matchAny reports whether a glob of gs matches v; no globs match anything.
func matchAny(gs []glob.Glob, v string) bool {
	if len(gs) == 0 {
		return true
	}
	for _, g := range gs {
		if g.Match(v) {
			return true
		}
	}
	return false
}
