package appspec

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// AnnotationDependsOn on an Argo CD Application lists, comma-separated,
// the apps it depends on (Application.DependsOn).
const AnnotationDependsOn = "windlass.dev/depends-on"

// MaxDependsOn bounds DependsOn: the list travels in the app's state.
const MaxDependsOn = 50

// takeDependsOn moves AnnotationDependsOn out of an Argo CD manifest's
// annotations into a DependsOn list.
func takeDependsOn(kv map[string]string) (map[string]string, []string) {
	v, ok := kv[AnnotationDependsOn]
	if !ok {
		return kv, nil
	}
	kv = maps.Clone(kv) //workflowcheck:ignore (a copy is the same in any order)
	delete(kv, AnnotationDependsOn)
	var deps []string
	for _, d := range strings.Split(v, ",") {
		if d = strings.TrimSpace(d); d != "" {
			deps = append(deps, d)
		}
	}
	return nonEmpty(kv), deps
}

// DependencyRef is one app of DependsOn, with its project resolved.
type DependencyRef struct {
	Project string `json:"project"`
	Name    string `json:"name"`
}

// String is "<project>/<name>".
func (r DependencyRef) String() string { return r.Project + "/" + r.Name }

// ParseDependency reads one DependsOn entry of an app in project.
func ParseDependency(project, entry string) DependencyRef {
	if p, n, ok := strings.Cut(entry, "/"); ok {
		return DependencyRef{Project: p, Name: n}
	}
	return DependencyRef{Project: project, Name: entry}
}

// Dependencies are the app's DependsOn, with their projects resolved.
func (a Application) Dependencies() []DependencyRef {
	out := make([]DependencyRef, 0, len(a.DependsOn))
	for _, d := range a.DependsOn {
		out = append(out, ParseDependency(a.Project, d))
	}
	return out
}

// validDependsOn checks each entry's names, and refuses duplicates and the
// app itself (a cycle of one).
func (a Application) validDependsOn() error {
	if len(a.DependsOn) > MaxDependsOn {
		return &FieldError{Field: "dependsOn", Reason: fmt.Sprintf("must list at most %d applications", MaxDependsOn)}
	}
	seen := make([]DependencyRef, 0, len(a.DependsOn))
	for i, d := range a.DependsOn {
		field := fmt.Sprintf("dependsOn[%d]", i)
		if strings.Count(d, "/") > 1 {
			return &FieldError{Field: field, Reason: fmt.Sprintf("%q must be <name> or <project>/<name>", d)}
		}
		if p, _, ok := strings.Cut(d, "/"); ok {
			if err := validName(field, p, 63); err != nil {
				return &FieldError{Field: field, Reason: fmt.Sprintf("project of %q %s", d, err.(*FieldError).Reason)}
			}
		}
		ref := ParseDependency(a.Project, d)
		if err := ValidateAppName(ref.Name); err != nil {
			return &FieldError{Field: field, Reason: fmt.Sprintf("%q: name %s", d, err.(*FieldError).Reason)}
		}
		switch {
		case ref.Project == a.Project && ref.Name == a.Name:
			return &FieldError{Field: field, Reason: fmt.Sprintf("cycle: %s -> %s: an application cannot depend on itself", a.Name, a.Name)}
		case slices.Contains(seen, ref):
			return &FieldError{Field: field, Reason: fmt.Sprintf("%q is listed twice", d)}
		}
		seen = append(seen, ref)
	}
	return nil
}

// DependsOnLookup returns the DependsOn of a saved app, and false when no
// such app exists.
type DependsOnLookup func(ctx context.Context, ref DependencyRef) ([]string, bool, error)

// maxGraphApps bounds the apps FindCycle visits.
const maxGraphApps = 10000

// FindCycle follows the dependencies of a, as it would be saved, through
// the saved apps, and returns the first cycle that leads back to a as
// "a -> b -> a" (names are qualified with their project when it is not
// a's), or "" when there is none.
func FindCycle(ctx context.Context, a Application, lookup DependsOnLookup) (string, error) {
	self := DependencyRef{Project: a.Project, Name: a.Name}
	name := func(r DependencyRef) string {
		if r.Project == a.Project {
			return r.Name
		}
		return r.String()
	}
	visited := map[DependencyRef]bool{self: true}
	var walk func(path []DependencyRef, deps []DependencyRef) (string, error)
	walk = func(path []DependencyRef, deps []DependencyRef) (string, error) {
		for _, d := range deps {
			if d == self {
				parts := make([]string, 0, len(path)+1)
				for _, p := range append(path, d) {
					parts = append(parts, name(p))
				}
				return strings.Join(parts, " -> "), nil
			}
			if visited[d] {
				continue
			}
			if len(visited) >= maxGraphApps {
				return "", fmt.Errorf("dependencies of %s: more than %d applications to follow", a.Name, maxGraphApps)
			}
			visited[d] = true
			next, ok, err := lookup(ctx, d)
			if err != nil {
				return "", fmt.Errorf("read dependency %s: %w", d, err)
			}
			if !ok {
				continue
			}
			refs := make([]DependencyRef, 0, len(next))
			for _, e := range next {
				refs = append(refs, ParseDependency(d.Project, e))
			}
			if c, err := walk(append(path, d), refs); c != "" || err != nil {
				return c, err
			}
		}
		return "", nil
	}
	return walk([]DependencyRef{self}, a.Dependencies())
}

// CheckCycle refuses a spec whose dependencies lead back to it, with a
// *FieldError on dependsOn that names the cycle.
func CheckCycle(ctx context.Context, a Application, lookup DependsOnLookup) error {
	if len(a.DependsOn) == 0 {
		return nil
	}
	c, err := FindCycle(ctx, a, lookup)
	if err != nil {
		return err
	}
	if c != "" {
		return &FieldError{Field: "dependsOn", Reason: "cycle: " + c}
	}
	return nil
}
