package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/internal/appspec"
)

var actionVerbs = []verb{
	{"list", "NAME", "list the actions of one of the application's resources (--kind, --resource-name)", (*cli).actionsList},
	{"run", "NAME ACTION", "run an action on one of the application's resources (--kind, --resource-name, --param k=v)", (*cli).actionsRun},
}

func (c *cli) appActions(ctx context.Context, args []string) error {
	return c.dispatch(ctx, "app actions", actionVerbs, args)
}

// resourceFlags are the flags that name one of an app's resources.
type resourceFlags struct {
	group, kind, namespace, name *string
}

func (f *flags) withResource() resourceFlags {
	return resourceFlags{
		group:     f.String("group", "", "the resource's API group (none for the core group)"),
		kind:      f.String("kind", "", "the resource's kind (required)"),
		namespace: f.String("namespace", "", "the resource's namespace"),
		name:      f.String("resource-name", "", "the resource's name (required)"),
	}
}

// query adds the resource to q, or says what is missing.
func (r resourceFlags) query(f *flags, q url.Values) error {
	if *r.kind == "" || *r.name == "" {
		return f.usageError("--kind and --resource-name are required")
	}
	for k, v := range map[string]string{"group": *r.group, "kind": *r.kind, "namespace": *r.namespace, "name": *r.name} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return nil
}

func (r resourceFlags) key() appspec.ResourceKey {
	return appspec.ResourceKey{Group: *r.group, Kind: *r.kind, Namespace: *r.namespace, Name: *r.name}
}

// params collects repeated --param k=v flags.
type params map[string]string

func (p params) String() string { return "" }

func (p params) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want NAME=VALUE", s)
	}
	p[k] = v
	return nil
}

// actionView is an action as the API lists it.
type actionView struct {
	Name     string `json:"name"`
	Disabled bool   `json:"disabled"`
	Source   string `json:"source"`
	Params   []struct {
		Name    string `json:"name"`
		Default string `json:"default"`
	} `json:"params"`
}

func (c *cli) actionsList(ctx context.Context, args []string) error {
	f := c.flags("app actions list", "NAME").withOutput()
	res := f.withResource()
	pos, q, s, err := f.appVerb(args, 1)
	if err != nil {
		return err
	}
	if err := res.query(f, q); err != nil {
		return err
	}
	var out struct {
		Actions []actionView `json:"actions"`
	}
	raw, err := s.api.json(ctx, http.MethodGet, appPath(pos[0])+"/resource/actions", q, nil, &out)
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) {
		if len(out.Actions) == 0 {
			fmt.Fprintf(w, "%s has no actions\n", res.key().Label())
			return
		}
		table(w, "NAME\tSOURCE\tDISABLED\tPARAMETERS", out.Actions, func(a actionView) []string {
			ps := make([]string, len(a.Params))
			for i, p := range a.Params {
				ps[i] = p.Name
				if p.Default != "" {
					ps[i] += "=" + p.Default
				}
			}
			return []string{a.Name, a.Source, fmt.Sprint(a.Disabled), orDash(strings.Join(ps, ","))}
		})
	})
}

func (c *cli) actionsRun(ctx context.Context, args []string) error {
	f := c.flags("app actions run", "NAME ACTION").withOutput()
	res := f.withResource()
	ps := params{}
	f.Var(ps, "param", "a parameter of the action, NAME=VALUE (repeatable)")
	pos, q, s, err := f.appVerb(args, 2)
	if err != nil {
		return err
	}
	if err := res.query(f, q); err != nil {
		return err
	}
	body := map[string]any{"action": pos[1]}
	if len(ps) > 0 {
		body["params"] = map[string]string(ps)
	}
	var out struct {
		Changes []cluster.ActionChange `json:"changes"`
	}
	raw, err := s.api.json(ctx, http.MethodPost, appPath(pos[0])+"/resource/actions", q, body, &out)
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) {
		fmt.Fprintf(w, "application %s: ran %s on %s\n", pos[0], pos[1], res.key().Label())
		table(w, "OPERATION\tGROUP\tKIND\tNAMESPACE\tNAME", out.Changes, func(ch cluster.ActionChange) []string {
			k := ch.Resource
			return []string{ch.Operation, k.Group, k.Kind, k.Namespace, k.Name}
		})
	})
}
