package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/windlass-cd/windlass/internal/appset"
)

var appsetVerbs = []verb{
	{"generate", "-f FILE", "print the apps an ApplicationSet would make, writing nothing", (*cli).appsetGenerate},
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
