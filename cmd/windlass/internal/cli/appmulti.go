package cli

import (
	"cmp"
	"context"
	"fmt"
	"net/url"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// target is an application a verb acts on: its name and the query that
// names its project.
type target struct {
	name string
	q    url.Values
}

// withSelector adds -l and --selector.
func (f *flags) withSelector() *string {
	sel := f.String("l", "", "act on the applications whose labels match this label selector (as app list -l)")
	f.StringVar(sel, "selector", "", "the same as -l")
	return sel
}

// targets are the applications a verb of several acts on: those named,
// with the project of q, then those whose labels match selector, each
// with its own project. A name is taken once.
func (c *cli) targets(ctx context.Context, f *flags, s *session, q url.Values, names []string, selector string) ([]target, error) {
	if len(names) == 0 && selector == "" {
		return nil, f.usageError("want %s", f.synopsis)
	}
	var out []target
	seen := map[string]bool{}
	add := func(name string, q url.Values) {
		if key := cmp.Or(q.Get("project"), appspec.DefaultProject) + "/" + name; !seen[key] {
			seen[key] = true
			out = append(out, target{name: name, q: q})
		}
	}
	for _, n := range names {
		add(n, cloneQuery(q))
	}
	if selector == "" {
		return out, nil
	}
	lq := cloneQuery(q)
	lq.Set("selector", selector)
	_, apps, err := listItems[appRow](ctx, s.api, appsPath, lq, 0)
	if err != nil {
		return nil, err
	}
	if len(apps) == 0 {
		return nil, cmdline.WithCode(cmdline.ExitNotFound, fmt.Errorf("no application matches the selector %q", selector))
	}
	for _, a := range apps {
		aq := url.Values{}
		if a.Project != "" {
			aq.Set("project", a.Project)
		}
		add(a.Name, aq)
	}
	return out, nil
}

// eachTarget runs do for each target. One target's error is returned as
// it is; with several, each error is reported on stderr, the others still
// run, and the error names how many failed, with the first one's code.
func (c *cli) eachTarget(targets []target, do func(t target) error) error {
	if len(targets) == 1 {
		return do(targets[0])
	}
	var first error
	failed := 0
	for _, t := range targets {
		if err := do(t); err != nil {
			if first == nil {
				first = err
			}
			failed++
			fmt.Fprintf(c.stderr, "application %s: %s\n", t.name, cmdline.Message(err))
		}
	}
	if first != nil {
		return cmdline.WithCode(cmdline.ExitCode(first), fmt.Errorf("%d of %d applications failed", failed, len(targets)))
	}
	return nil
}
