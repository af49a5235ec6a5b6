package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/windlass-cd/windlass/internal/appspec"
)

var projVerbs = []verb{
	{"list", "", "list the projects", (*cli).projList},
	{"get", "NAME", "show a project", (*cli).projGet},
	{"create", "-f FILE", "create a project from a Windlass or Argo CD AppProject file", (*cli).projCreate},
	{"delete", "NAME", "delete a project", (*cli).projDelete},
	{"role", "create-token|list-tokens|delete-token PROJ ROLE", "the API tokens of a project role", (*cli).projRole},
}

var roleVerbs = []verb{
	{"create-token", "PROJ ROLE", "mint an API token for the role proj:PROJ:ROLE (printed once)", (*cli).roleCreateToken},
	{"list-tokens", "PROJ ROLE", "list the role's tokens", (*cli).roleListTokens},
	{"delete-token", "PROJ ROLE ID", "delete one of the role's tokens", (*cli).roleDeleteToken},
}

func projPath(name string) string { return "/api/v1/projects/" + url.PathEscape(name) }

func (c *cli) projList(ctx context.Context, args []string) error {
	return listVerb(ctx, c, args, "proj list", "/api/v1/projects", "NAME\tDESCRIPTION\tSOURCES\tDESTINATIONS", func(p appspec.Project) []string {
		return []string{p.Name, p.Description, strings.Join(p.SourceRepos, ","), destinations(p.Destinations)}
	})
}

func destinations(ds []appspec.ProjectDestination) string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = orDash(d.Server) + " " + orDash(d.Namespace)
	}
	return strings.Join(out, ", ")
}

func groupKinds(gks []appspec.GroupKind) string {
	out := make([]string, len(gks))
	for i, gk := range gks {
		out[i] = gk.Group + "/" + gk.Kind
	}
	return strings.Join(out, ", ")
}

func (c *cli) projGet(ctx context.Context, args []string) error {
	f := c.flags("proj get", "NAME").withOutput()
	pos, s, err := f.start(args, 1)
	if err != nil {
		return err
	}
	var p appspec.Project
	raw, err := s.api.json(ctx, http.MethodGet, projPath(pos[0]), nil, nil, &p)
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) {
		details(w, "Name", p.Name, "Description", p.Description,
			"Sources", strings.Join(p.SourceRepos, ", "), "Destinations", destinations(p.Destinations),
			"Cluster resources allowed", groupKinds(p.ClusterResourceWhitelist),
			"Cluster resources denied", groupKinds(p.ClusterResourceBlacklist),
			"Namespaced resources allowed", groupKinds(p.NamespaceResourceWhitelist),
			"Namespaced resources denied", groupKinds(p.NamespaceResourceBlacklist))
		if len(p.SyncWindows) > 0 {
			fmt.Fprintln(w)
			table(w, "WINDOW\tSCHEDULE\tDURATION\tAPPLICATIONS\tNAMESPACES\tCLUSTERS\tMANUAL SYNC\tTIME ZONE", p.SyncWindows, func(sw appspec.SyncWindow) []string {
				return []string{sw.Kind, sw.Schedule, sw.Duration, strings.Join(sw.Applications, ","),
					strings.Join(sw.Namespaces, ","), strings.Join(sw.Clusters, ","), yesNo(sw.ManualSync), sw.TimeZone}
			})
		}
		if len(p.Roles) > 0 {
			fmt.Fprintln(w)
			table(w, "ROLE\tDESCRIPTION\tPOLICIES\tGROUPS", p.Roles, func(r appspec.ProjectRole) []string {
				return []string{r.Name, r.Description, fmt.Sprint(len(r.Policies)), strings.Join(r.Groups, ",")}
			})
		}
	})
}

func (c *cli) projCreate(ctx context.Context, args []string) error {
	f := c.flags("proj create", "").withOutput()
	file := f.String("f", "", "the project file: Windlass JSON or YAML, or an Argo CD AppProject (- for stdin)")
	_, s, err := f.start(args, 0)
	if err != nil {
		return err
	}
	if *file == "" {
		return f.usageError("-f FILE is required")
	}
	var p appspec.Project
	raw, err := c.createFrom(ctx, s, *file, "/api/v1/projects", nil, &p)
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) { fmt.Fprintf(w, "project %s created\n", p.Name) })
}

func (c *cli) projDelete(ctx context.Context, args []string) error {
	return c.remove(ctx, args, "proj delete", "NAME", "project", "deleted", projPath)
}

func (c *cli) projRole(ctx context.Context, args []string) error {
	return c.dispatch(ctx, "proj role", roleVerbs, args)
}

func rolePath(proj, role string) string {
	return projPath(proj) + "/roles/" + url.PathEscape(role) + "/tokens"
}

func (c *cli) roleCreateToken(ctx context.Context, args []string) error {
	f := c.flags("proj role create-token", "PROJ ROLE").withOutput()
	t := f.withToken()
	pos, s, err := f.start(args, 2)
	if err != nil {
		return err
	}
	return c.createToken(ctx, f, s, rolePath(pos[0], pos[1]), "proj:"+pos[0]+":"+pos[1], t)
}

func (c *cli) roleListTokens(ctx context.Context, args []string) error {
	f := c.flags("proj role list-tokens", "PROJ ROLE").withOutput()
	pos, s, err := f.start(args, 2)
	if err != nil {
		return err
	}
	return c.listTokens(ctx, f, s, rolePath(pos[0], pos[1]))
}

func (c *cli) roleDeleteToken(ctx context.Context, args []string) error {
	f := c.flags("proj role delete-token", "PROJ ROLE ID")
	pos, s, err := f.start(args, 3)
	if err != nil {
		return err
	}
	return c.deleteToken(ctx, s, rolePath(pos[0], pos[1]), pos[2])
}
