package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/windlass-cd/windlass/internal/customizations"
	"github.com/windlass-cd/windlass/internal/settings"
)

// customizationsPath is the settings API of the health and action library.
const customizationsPath = "/api/v1/settings/resource-customizations"

var settingsVerbs = []verb{
	{"resource-customizations", "get|set", "the Git source of the Lua health checks and actions, and the workers' loads", (*cli).settingsCustomizations},
}

var customizationsVerbs = []verb{
	{"get", "", "show the source set through the API and each worker's last load", (*cli).customizationsGet},
	{"set", "--repo URL [--path P] [--revision R] | --clear", "set the Git source the workers load at their next reload", (*cli).customizationsSet},
}

func (c *cli) settingsCustomizations(ctx context.Context, args []string) error {
	return c.dispatch(ctx, "settings resource-customizations", customizationsVerbs, args)
}

// customizationsView is GET's answer (api.CustomizationsView).
type customizationsView struct {
	Setting settings.CustomizationsSource `json:"setting"`
	Workers []customizations.WorkerStatus `json:"workers"`
}

func (c *cli) customizationsGet(ctx context.Context, args []string) error {
	f := c.flags("settings resource-customizations get", "").withOutput()
	_, s, err := f.start(args, 0)
	if err != nil {
		return err
	}
	var out customizationsView
	raw, err := s.api.json(ctx, http.MethodGet, customizationsPath, nil, nil, &out)
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) {
		if out.Setting.RepoURL == "" {
			fmt.Fprintln(w, "Source:  none set through the API (workers use their flags, or the built-in checks)")
		} else {
			details(w, "Source", sourceOf(out.Setting))
		}
		fmt.Fprintln(w)
		if len(out.Workers) == 0 {
			fmt.Fprintln(w, "No worker has loaded customizations recently.")
			return
		}
		table(w, "WORKER\tORIGIN\tSOURCE\tREVISION\tLOADED\tACTION KINDS\tERROR", out.Workers, func(ws customizations.WorkerStatus) []string {
			return []string{ws.Worker, orDash(ws.Origin), orDash(ws.Source), orDash(ws.Revision), orDash(fmtTime(ws.LoadedAt)),
				fmt.Sprint(ws.ActionKinds), orDash(ws.Error)}
		})
	})
}

func (c *cli) customizationsSet(ctx context.Context, args []string) error {
	f := c.flags("settings resource-customizations set", "--repo URL [--path P] [--revision R] | --clear").withOutput()
	var set settings.CustomizationsSource
	f.StringVar(&set.RepoURL, "repo", "", "the Git repository of the scripts, in Argo CD's resource_customizations layout (registered for its credentials)")
	f.StringVar(&set.Path, "path", "", "the folder of the repository that holds the tree (default: its root)")
	f.StringVar(&set.Revision, "revision", "", "a branch, tag or commit (default: HEAD)")
	remove := f.Bool("clear", false, "remove the source: the workers keep only their flags' scripts, or the built-in checks")
	_, s, err := f.start(args, 0)
	if err != nil {
		return err
	}
	for _, n := range []string{"repo", "path", "revision"} {
		if err := f.exclusive("clear", n); err != nil {
			return err
		}
	}
	if set.RepoURL == "" && !*remove {
		return f.usageError("give --repo, or --clear")
	}
	var out settings.CustomizationsSource
	raw, err := s.api.json(ctx, http.MethodPut, customizationsPath, nil, set, &out)
	if err != nil {
		return fmt.Errorf("set the resource customizations source: %w", err)
	}
	return f.print(raw, func(w io.Writer) {
		if out.RepoURL == "" {
			fmt.Fprintln(w, "resource customizations source cleared; workers drop it at their next reload")
			return
		}
		fmt.Fprintf(w, "resource customizations source set: %s; workers load it at their next reload\n", sourceOf(out))
	})
}

// sourceOf renders a source as "URL, path P, revision R".
func sourceOf(s settings.CustomizationsSource) string {
	parts := []string{s.RepoURL}
	if s.Path != "" {
		parts = append(parts, "path "+s.Path)
	}
	rev := s.Revision
	if rev == "" {
		rev = "HEAD"
	}
	return strings.Join(append(parts, "revision "+rev), ", ")
}
