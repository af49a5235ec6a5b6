package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/windlass-cd/windlass/internal/appset"
	"github.com/windlass-cd/windlass/workflows"
)

var appsetVerbs = []verb{
	{"create", "-f FILE [--upsert]", "create an ApplicationSet from Argo CD YAML", (*cli).appsetCreate},
	{"get", "NAME", "show an ApplicationSet, its status and its apps", (*cli).appsetGet},
	{"list", "", "list the ApplicationSets", (*cli).appsetList},
	{"delete", "NAME [--cascade=false]", "delete an ApplicationSet and its apps", (*cli).appsetDelete},
	{"generate", "-f FILE", "print the apps an ApplicationSet would make, writing nothing", (*cli).appsetGenerate},
	{"rollout", "status|pause|resume|abort NAME", "show, pause, resume or abort a set's progressive rollout", (*cli).appsetRollout},
}

func appsetPath(name string) string { return "/api/v1/applicationsets/" + url.PathEscape(name) }

// appsetSummary is a row of the list.
type appsetSummary struct {
	Name      string `json:"name"`
	Project   string `json:"project"`
	Apps      int    `json:"apps"`
	Generated int    `json:"generated"`
	Error     string `json:"error"`
	// Generators name the set's generators, as the UI's list shows them.
	Generators []string `json:"generators"`
}

// appsetDetail is a set as GET answers it.
type appsetDetail struct {
	Set struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			SyncPolicy *appset.SyncPolicy `json:"syncPolicy"`
		} `json:"spec"`
	} `json:"set"`
	Status struct {
		Apps            []string `json:"apps"`
		Generated       int      `json:"generated"`
		Error           string   `json:"error"`
		ErrorKind       string   `json:"errorKind"`
		LastEvaluatedAt string   `json:"lastEvaluatedAt"`
		LastReason      string   `json:"lastReason"`
		Rollout         *struct {
			Message string `json:"message"`
		} `json:"rollout"`
	} `json:"status"`
	Applications []struct {
		Project string `json:"project"`
		Name    string `json:"name"`
		Sync    string `json:"sync"`
		Health  string `json:"health"`
	} `json:"applications"`
	Rollout *workflows.RolloutStatus `json:"rollout"`
}

func (c *cli) appsetCreate(ctx context.Context, args []string) error {
	f := c.flags("appset create", "-f FILE [--upsert]").withOutput()
	file := f.String("f", "", "the ApplicationSet file, YAML or JSON (- for stdin)")
	upsert := f.Bool("upsert", false, "update the set if it exists")
	_, s, err := f.start(args, 0)
	if err != nil {
		return err
	}
	if *file == "" {
		return f.usageError("-f FILE is required")
	}
	body, ct, err := c.bodyOf(*file)
	if err != nil {
		return err
	}
	var q url.Values
	if *upsert {
		q = url.Values{"upsert": {"true"}}
	}
	var out appsetDetail
	_, raw, err := s.api.post(ctx, "/api/v1/applicationsets", q, body, ct, &out)
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) { fmt.Fprintf(w, "applicationset %s created\n", out.Set.Metadata.Name) })
}

func (c *cli) appsetGet(ctx context.Context, args []string) error {
	f := c.flags("appset get", "NAME").withOutput()
	pos, s, err := f.start(args, 1)
	if err != nil {
		return err
	}
	var out appsetDetail
	raw, err := s.api.json(ctx, http.MethodGet, appsetPath(pos[0]), nil, nil, &out)
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) {
		policy := appset.PolicySync
		if p := out.Set.Spec.SyncPolicy; p != nil && p.ApplicationsSync != "" {
			policy = p.ApplicationsSync
		}
		tw := newTable(w)
		fmt.Fprintf(tw, "Name:\t%s\n", out.Set.Metadata.Name)
		fmt.Fprintf(tw, "Policy:\t%s\n", policy)
		fmt.Fprintf(tw, "Apps:\t%d (%d generated)\n", len(out.Status.Apps), out.Status.Generated)
		fmt.Fprintf(tw, "Last evaluated:\t%s (%s)\n", orDash(out.Status.LastEvaluatedAt), orDash(out.Status.LastReason))
		if out.Status.Error != "" {
			fmt.Fprintf(tw, "Error:\t%s: %s\n", out.Status.ErrorKind, out.Status.Error)
		}
		if ro := out.Status.Rollout; ro != nil && ro.Message != "" {
			fmt.Fprintf(tw, "Rollout:\t%s\n", ro.Message)
		}
		tw.Flush()
		if out.Rollout != nil {
			fmt.Fprintln(w)
			printRollout(w, *out.Rollout)
		}
		if len(out.Applications) == 0 {
			return
		}
		fmt.Fprintln(w)
		tw = newTable(w)
		fmt.Fprintln(tw, "PROJECT\tNAME\tSYNC\tHEALTH")
		for _, a := range out.Applications {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.Project, a.Name, a.Sync, a.Health)
		}
		tw.Flush()
	})
}

func (c *cli) appsetList(ctx context.Context, args []string) error {
	return listVerb(ctx, c, args, "appset list", "/api/v1/applicationsets", "NAME\tPROJECT\tAPPS\tGENERATED\tGENERATORS\tERROR", func(r appsetSummary) []string {
		return []string{r.Name, r.Project, strconv.Itoa(r.Apps), strconv.Itoa(r.Generated), orDash(strings.Join(r.Generators, "; ")), orDash(r.Error)}
	})
}

func (c *cli) appsetDelete(ctx context.Context, args []string) error {
	f := c.flags("appset delete", "NAME [--cascade=false]").withOutput()
	cascade := f.Bool("cascade", true, "delete the set's apps too (false: keep them)")
	pos, s, err := f.start(args, 1)
	if err != nil {
		return err
	}
	q := url.Values{"cascade": {strconv.FormatBool(*cascade)}}
	var out struct {
		Deleted []string `json:"deleted"`
	}
	raw, err := s.api.json(ctx, http.MethodDelete, appsetPath(pos[0]), q, nil, &out)
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) {
		fmt.Fprintf(w, "applicationset %s deleted", pos[0])
		if len(out.Deleted) > 0 {
			fmt.Fprintf(w, " with %d apps: %s", len(out.Deleted), strings.Join(out.Deleted, ", "))
		}
		fmt.Fprintln(w)
	})
}

// appsetGenerate previews an ApplicationSet, as argocd appset generate.
func (c *cli) appsetGenerate(ctx context.Context, args []string) error {
	f := c.flags("appset generate", "-f FILE").withOutput()
	file := f.String("f", "", "the ApplicationSet file, YAML or JSON (- for stdin)")
	_, s, err := f.start(args, 0)
	if err != nil {
		return err
	}
	if *file == "" {
		return f.usageError("-f FILE is required")
	}
	body, ct, err := c.bodyOf(*file)
	if err != nil {
		return err
	}
	var out struct {
		Applications []appset.App `json:"applications"`
	}
	_, raw, err := s.api.post(ctx, "/api/v1/applicationsets/generate", nil, body, ct, &out)
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) {
		tw := newTable(w)
		fmt.Fprintln(tw, "NAME\tPROJECT\tDESTINATION\tNAMESPACE\tREPO\tPATH\tTARGET")
		for _, a := range out.Applications {
			app := a.Application
			dest := app.Destination.Server
			if app.Destination.Name != "" {
				dest = app.Destination.Name
			}
			src := app.Source
			if len(app.Sources) > 0 {
				src = app.Sources[0]
			}
			path := src.Path
			if src.Chart != "" {
				path = src.Chart
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", app.Name, app.Project, dest, app.Destination.Namespace, src.RepoURL, path, src.TargetRevision)
		}
		tw.Flush()
	})
}
