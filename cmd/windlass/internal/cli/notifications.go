package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/windlass-cd/windlass/internal/notifications"
	"github.com/windlass-cd/windlass/workflows"
)

var notificationsVerbs = []verb{
	{"preview", "--app APP --template TEMPLATE", "render a template against an app, without sending it", (*cli).notifyPreview},
	{"trigger", "run --app APP --trigger TRIGGER", "evaluate a trigger's conditions against an app", (*cli).notifyTrigger},
	{"history", "APP", "the app's latest notification deliveries", (*cli).notifyHistory},
}

var triggerVerbs = []verb{
	{"run", "--app APP --trigger TRIGGER", "evaluate a trigger's conditions against an app", (*cli).notifyTriggerRun},
}

func (c *cli) notifyTrigger(ctx context.Context, args []string) error {
	return c.dispatch(ctx, "notifications trigger", triggerVerbs, args)
}

// notifyFlags are the flags of preview and trigger run: the app, and the
// configuration (the server's, or a file's).
type notifyFlags struct {
	*flags
	app, configMap *string
}

func (c *cli) notifyFlags(name, synopsis string) notifyFlags {
	f := c.flags(name, synopsis).withOutput().withProject()
	return notifyFlags{flags: f,
		app:       f.String("app", "", "the application"),
		configMap: f.String("config-map", "", "argocd-notifications-cm file to use instead of the server's configuration"),
	}
}

// load returns the configuration and the app as triggers see it.
func (f notifyFlags) load(ctx context.Context, args []string) (*notifications.Config, notifications.App, error) {
	_, q, s, err := f.appVerb(args, 0)
	if err != nil {
		return nil, notifications.App{}, err
	}
	if *f.app == "" {
		return nil, notifications.App{}, errors.New("--app is required")
	}
	var cfg *notifications.Config
	if *f.configMap != "" {
		cfg, err = notifications.ParseFile(*f.configMap)
	} else {
		var v struct {
			Config string `json:"config"`
		}
		if _, err = s.api.json(ctx, http.MethodGet, "/api/v1/settings/notifications", nil, nil, &v); err == nil {
			var data map[string]string
			if data, err = notifications.DecodeData([]byte(v.Config)); err == nil {
				cfg, err = notifications.Parse(data)
			}
		}
	}
	if err != nil {
		return nil, notifications.App{}, err
	}
	var view workflows.AppView
	if _, err := s.api.json(ctx, http.MethodGet, appPath(*f.app), q, nil, &view); err != nil {
		return nil, notifications.App{}, err
	}
	return cfg, view.NotificationApp(), nil
}

func (c *cli) notifyPreview(ctx context.Context, args []string) error {
	f := c.notifyFlags("notifications preview", "--app APP --template TEMPLATE")
	tmpl := f.String("template", "", "the template to render")
	service := f.String("service", "", "the service type the template is rendered for (.serviceType)")
	recipient := f.String("recipient", "", "the recipient the template is rendered for (.recipient)")
	cfg, app, err := f.load(ctx, args)
	if err != nil {
		return err
	}
	t, ok := cfg.Templates[*tmpl]
	if !ok {
		return fmt.Errorf("no template %q (have: %s)", *tmpl, strings.Join(sortedNames(cfg.Templates), ", "))
	}
	out, err := t.Render(notifications.Vars{App: app, Context: cfg.Context, ServiceType: *service, Recipient: *recipient})
	if err != nil {
		return err
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) {
		fmt.Fprintln(w, out.Message)
		var fields map[string]any
		_ = json.Unmarshal(raw, &fields)
		delete(fields, "message")
		if len(fields) > 0 {
			b, _ := json.MarshalIndent(fields, "", "  ")
			fmt.Fprintf(w, "\n%s\n", b)
		}
	})
}

// conditionRow is one condition's result in trigger run.
type conditionRow struct {
	Condition int      `json:"condition"`
	When      string   `json:"when"`
	Fired     bool     `json:"fired"`
	OncePer   string   `json:"oncePer,omitempty"`
	Send      []string `json:"send"`
}

func (c *cli) notifyTriggerRun(ctx context.Context, args []string) error {
	f := c.notifyFlags("notifications trigger run", "--app APP --trigger TRIGGER")
	name := f.String("trigger", "", "the trigger to evaluate")
	cfg, app, err := f.load(ctx, args)
	if err != nil {
		return err
	}
	t, ok := cfg.Triggers[*name]
	if !ok {
		return fmt.Errorf("no trigger %q (have: %s)", *name, strings.Join(cfg.TriggerNames(), ", "))
	}
	results, err := t.Run(app)
	if err != nil {
		return err
	}
	rows := make([]conditionRow, 0, len(results))
	for _, r := range results {
		rows = append(rows, conditionRow{Condition: r.Condition, When: t.Conditions[r.Condition].When, Fired: r.Fired, OncePer: r.OncePer, Send: r.Send})
	}
	raw, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) {
		table(w, "CONDITION\tRESULT\tONCE PER\tSEND\tWHEN", rows, func(r conditionRow) []string {
			return []string{fmt.Sprint(r.Condition), fmt.Sprint(r.Fired), r.OncePer, strings.Join(r.Send, ","), r.When}
		})
	})
}

func (c *cli) notifyHistory(ctx context.Context, args []string) error {
	f := c.flags("notifications history", "APP").withOutput()
	var recs []workflows.NotificationRecord
	raw, err := f.fetchApp(ctx, args, "/notifications", &recs)
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) {
		table(w, "TIME\tTRIGGER\tTEMPLATE\tDESTINATION\tRESULT\tATTEMPTS\tERROR", recs, func(r workflows.NotificationRecord) []string {
			return []string{r.Time.Format("2006-01-02 15:04:05"), r.Trigger, r.Template, r.Service + ":" + r.Recipient, r.Result, fmt.Sprint(r.Attempts), r.Error}
		})
	})
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
