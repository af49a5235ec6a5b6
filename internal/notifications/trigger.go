package notifications

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
	"sigs.k8s.io/yaml"
)

// Trigger is a named list of conditions; each sends its templates when
// its When expression is true.
type Trigger struct {
	Name       string      `json:"name"`
	Conditions []Condition `json:"conditions"`
}

// Condition is one condition of a trigger. OncePer, when set, is an
// expression whose value (a revision, a sync's start) the condition
// notifies once for; without it, the condition notifies when it turns true.
type Condition struct {
	Description string   `json:"description,omitempty"`
	Send        []string `json:"send"`
	When        string   `json:"when"`
	OncePer     string   `json:"oncePer,omitempty"`

	when, oncePer *vm.Program
}

// exprEnv is what conditions see: the app in Argo CD's shape and the
// helper namespaces Argo CD documents.
func exprEnv(app map[string]any) map[string]any {
	return map[string]any{"app": app, "time": timeFuncs(), "strings": stringFuncs()}
}

func timeFuncs() map[string]any {
	return map[string]any{
		"Now":   func() time.Time { return time.Now() },
		"Parse": func(s string) (time.Time, error) { return time.Parse(time.RFC3339, s) },
	}
}

func stringFuncs() map[string]any {
	return map[string]any{
		"ReplaceAll": strings.ReplaceAll,
		"ToUpper":    strings.ToUpper,
		"ToLower":    strings.ToLower,
	}
}

// compileExpr compiles a condition against the shape of the env.
func compileExpr(src string, asBool bool) (*vm.Program, error) {
	opts := []expr.Option{expr.Env(exprEnv(App{}.View()))}
	if asBool {
		opts = append(opts, expr.AsBool())
	}
	return expr.Compile(src, opts...)
}

func (c *Config) addTrigger(name, v string) error {
	var conds []Condition
	if err := yaml.UnmarshalStrict([]byte(v), &conds); err != nil {
		return err
	}
	t, err := c.compileTrigger(name, conds)
	if err != nil {
		return err
	}
	c.Triggers[name] = t
	return nil
}

func (c *Config) compileTrigger(name string, conds []Condition) (Trigger, error) {
	if len(conds) == 0 {
		return Trigger{}, errors.New("a trigger needs at least one condition")
	}
	var errs []error
	for i := range conds {
		cd := &conds[i]
		if cd.When == "" {
			errs = append(errs, fmt.Errorf("[%d].when is required", i))
		} else if p, err := compileExpr(cd.When, true); err != nil {
			errs = append(errs, fmt.Errorf("[%d].when does not compile: %w", i, err))
		} else {
			cd.when = p
		}
		if cd.OncePer != "" {
			if p, err := compileExpr(cd.OncePer, false); err != nil {
				errs = append(errs, fmt.Errorf("[%d].oncePer does not compile: %w", i, err))
			} else {
				cd.oncePer = p
			}
		}
		if len(cd.Send) == 0 {
			errs = append(errs, fmt.Errorf("[%d].send names no template", i))
		}
		for _, s := range cd.Send {
			if _, ok := c.Templates[s]; !ok && c.Templates != nil {
				errs = append(errs, fmt.Errorf("[%d].send: unknown template %q", i, s))
			}
		}
	}
	return Trigger{Name: name, Conditions: conds}, errors.Join(errs...)
}

// Result is what one condition says about an app.
type Result struct {
	Trigger   string
	Condition int
	Send      []string
	Fired     bool
	// OncePer is the oncePer value when the condition fired and has one.
	OncePer string
}

// Run evaluates each condition of the trigger against the app.
func (t Trigger) Run(app App) ([]Result, error) {
	env := exprEnv(app.View())
	out := make([]Result, 0, len(t.Conditions))
	for i, cd := range t.Conditions {
		r := Result{Trigger: t.Name, Condition: i, Send: cd.Send}
		v, err := expr.Run(cd.when, env)
		if err != nil {
			return nil, fmt.Errorf("trigger %s[%d]: %w", t.Name, i, err)
		}
		r.Fired, _ = v.(bool)
		if r.Fired && cd.oncePer != nil {
			v, err := expr.Run(cd.oncePer, env)
			if err != nil {
				return nil, fmt.Errorf("trigger %s[%d] oncePer: %w", t.Name, i, err)
			}
			if v != nil {
				r.OncePer = fmt.Sprint(v)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// Built-in trigger and template names: Argo CD's catalogue.
const (
	TriggerCreated           = "on-created"
	TriggerDeleted           = "on-deleted"
	TriggerDeployed          = "on-deployed"
	TriggerHealthDegraded    = "on-health-degraded"
	TriggerSyncFailed        = "on-sync-failed"
	TriggerSyncRunning       = "on-sync-running"
	TriggerSyncStatusUnknown = "on-sync-status-unknown"
	TriggerSyncSucceeded     = "on-sync-succeeded"
)

// builtin is one built-in trigger: when, oncePer, and its template.
type builtin struct{ when, oncePer string }

// Each sync notifies once: its start time stands for it. A deployment
// notifies once per revision.
var builtins = map[string]builtin{
	TriggerCreated:           {when: `true`, oncePer: `app.metadata.name`},
	TriggerDeleted:           {when: `app.metadata.deletionTimestamp != nil`, oncePer: `app.metadata.name`},
	TriggerDeployed:          {when: `app.status.operationState?.phase == "Succeeded" && app.status.health.status == "Healthy"`, oncePer: `app.status.operationState?.syncResult?.revision`},
	TriggerHealthDegraded:    {when: `app.status.health.status == "Degraded"`},
	TriggerSyncFailed:        {when: `app.status.operationState?.phase in ["Failed", "Error"]`, oncePer: `app.status.operationState?.startedAt`},
	TriggerSyncRunning:       {when: `app.status.operationState?.phase == "Running"`, oncePer: `app.status.operationState?.startedAt`},
	TriggerSyncStatusUnknown: {when: `app.status.sync.status == "Unknown"`},
	TriggerSyncSucceeded:     {when: `app.status.operationState?.phase == "Succeeded"`, oncePer: `app.status.operationState?.startedAt`},
}

// BuiltinTemplate names the template a built-in trigger sends:
// "app-" and the trigger's name without "on-".
func BuiltinTemplate(trigger string) string {
	return "app-" + strings.TrimPrefix(trigger, "on-")
}

func builtinTriggers() map[string]Trigger {
	out := map[string]Trigger{}
	nc := &Config{} // built-in templates are checked by their own test
	for name, b := range builtins {
		t, err := nc.compileTrigger(name, []Condition{{Send: []string{BuiltinTemplate(name)}, When: b.when, OncePer: b.oncePer}})
		if err != nil {
			panic(fmt.Sprintf("built-in trigger %s: %v", name, err))
		}
		out[name] = t
	}
	return out
}
