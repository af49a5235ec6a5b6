package notifications

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func op(phase string) *Operation {
	return &Operation{ID: "sync/default/guestbook/1", Phase: phase, Revision: "abc123", StartedAt: t0, Message: "apply failed"}
}

// Each built-in trigger fires on the states Argo CD's fires on, and on
// no other.
func TestBuiltinTriggers(t *testing.T) {
	base := App{Name: "guestbook", Project: "default", Sync: "Synced", Health: "Healthy", Revision: "abc123"}
	with := func(f func(*App)) App { a := base; f(&a); return a }
	states := map[string]App{
		"new":         base,
		"deleting":    with(func(a *App) { a.Deleting = true }),
		"running":     with(func(a *App) { a.Operation = op("Running"); a.Health = "Progressing" }),
		"succeeded":   with(func(a *App) { a.Operation = op("Succeeded") }),
		"progressing": with(func(a *App) { a.Operation = op("Succeeded"); a.Health = "Progressing" }),
		"failed":      with(func(a *App) { a.Operation = op("Failed") }),
		"error":       with(func(a *App) { a.Operation = op("Error") }),
		"degraded":    with(func(a *App) { a.Health = "Degraded" }),
		"unknown":     with(func(a *App) { a.Sync = "Unknown" }),
	}
	want := map[string][]string{
		TriggerCreated:           {"degraded", "deleting", "error", "failed", "new", "progressing", "running", "succeeded", "unknown"},
		TriggerDeleted:           {"deleting"},
		TriggerDeployed:          {"succeeded"},
		TriggerHealthDegraded:    {"degraded"},
		TriggerSyncFailed:        {"error", "failed"},
		TriggerSyncRunning:       {"running"},
		TriggerSyncStatusUnknown: {"unknown"},
		TriggerSyncSucceeded:     {"progressing", "succeeded"},
	}
	c, err := Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	for trig, states0 := range want {
		t.Run(trig, func(t *testing.T) {
			var got []string
			for _, name := range sortedKeys(states) {
				rs, err := c.Triggers[trig].Run(states[name])
				if err != nil {
					t.Fatal(err)
				}
				if rs[0].Fired {
					got = append(got, name)
				}
			}
			if d := cmp.Diff(states0, got); d != "" {
				t.Errorf("fired on (-want +got):\n%s", d)
			}
		})
	}
}

func TestBuiltinOncePer(t *testing.T) {
	c, err := Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	a := App{Name: "guestbook", Sync: "Synced", Health: "Healthy", Operation: op("Succeeded")}
	tests := map[string]string{
		TriggerDeployed:      "abc123",
		TriggerSyncSucceeded: "2026-01-02T03:04:05Z",
		TriggerCreated:       "guestbook",
	}
	for trig, want := range tests {
		rs, err := c.Triggers[trig].Run(a)
		if err != nil {
			t.Fatal(err)
		}
		if rs[0].OncePer != want {
			t.Errorf("%s oncePer = %q, want %q", trig, rs[0].OncePer, want)
		}
	}
}

func planConfig(t *testing.T) *Config {
	t.Helper()
	c, err := Parse(map[string]string{
		"service.webhook.hook": "url: http://127.0.0.1/x",
		"service.slack":        "token: $slack-token",
		"template.degraded":    "message: '{{.app.metadata.name}} degraded'",
		"trigger.on-degraded":  "- when: app.status.health.status == 'Degraded'\n  send: [degraded]",
		"defaultTriggers":      "[on-sync-failed]",
		"subscriptions":        "- recipients: [slack:all]\n  triggers: [on-deployed]\n  selector: team=pay",
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type dl struct{ Trigger, Dest, OncePer string }

func brief(p Plan) []dl {
	var out []dl
	for _, d := range p.Deliveries {
		out = append(out, dl{d.Trigger, d.Service + ":" + d.Recipient, d.OncePer})
	}
	return out
}

// A sequence of app states, each evaluated with the state the previous
// evaluation returned: oncePer sends once per value, a condition without
// it sends each time it turns true.
func TestEvaluateSequence(t *testing.T) {
	c := planConfig(t)
	ann := map[string]string{
		AnnotationPrefix + "on-deployed.hook":  "",
		AnnotationPrefix + "on-degraded.slack": "ops;dev",
		AnnotationPrefix + "slack":             "failures",
		"unrelated.example.com/subscribe.x.y":  "z",
	}
	app := func(f func(*App)) App {
		a := App{Name: "guestbook", Project: "default", Sync: "Synced", Health: "Healthy", Annotations: ann, Labels: map[string]string{"team": "pay"}}
		f(&a)
		return a
	}
	deployed := func(rev string) func(*App) {
		return func(a *App) { a.Operation = op("Succeeded"); a.Operation.Revision = rev; a.Revision = rev }
	}
	steps := []struct {
		name string
		app  App
		want []dl
	}{
		{"deployed abc", app(deployed("abc")), []dl{
			{TriggerDeployed, "hook:", "abc"}, {TriggerDeployed, "slack:all", "abc"}}},
		{"same revision again", app(deployed("abc")), nil},
		{"degraded", app(func(a *App) { deployed("abc")(a); a.Health = "Degraded" }), []dl{
			{"on-degraded", "slack:ops", ""}, {"on-degraded", "slack:dev", ""}}},
		{"still degraded", app(func(a *App) { deployed("abc")(a); a.Health = "Degraded" }), nil},
		{"healthy", app(deployed("abc")), nil},
		{"degraded again", app(func(a *App) { deployed("abc")(a); a.Health = "Degraded" }), []dl{
			{"on-degraded", "slack:ops", ""}, {"on-degraded", "slack:dev", ""}}},
		{"sync failed", app(func(a *App) { a.Operation = op("Failed") }), []dl{
			{TriggerSyncFailed, "slack:failures", t0.Format(time.RFC3339)}}},
		{"deployed def", app(deployed("def")), []dl{
			{TriggerDeployed, "hook:", "def"}, {TriggerDeployed, "slack:all", "def"}}},
	}
	state := map[string]string{}
	keys := map[string]string{}
	for i, s := range steps {
		p := c.Evaluate("default/guestbook", s.app, nil, state, i)
		if len(p.Problems) > 0 {
			t.Fatalf("%s: problems %v", s.name, p.Problems)
		}
		if d := cmp.Diff(s.want, brief(p)); d != "" {
			t.Errorf("%s: deliveries (-want +got):\n%s", s.name, d)
		}
		for _, d := range p.Deliveries {
			if prev, dup := keys[d.Key]; dup {
				t.Errorf("%s: key %s was already used by %s", s.name, d.Key, prev)
			}
			keys[d.Key] = s.name
		}
		state = p.State
	}
}

func TestEvaluateKeysAreDeterministic(t *testing.T) {
	c := planConfig(t)
	a := App{Name: "guestbook", Sync: "Synced", Health: "Healthy", Operation: op("Succeeded"),
		Annotations: map[string]string{AnnotationPrefix + "on-deployed.hook": ""}}
	p1 := c.Evaluate("default/guestbook", a, nil, nil, 1)
	p2 := c.Evaluate("default/guestbook", a, nil, nil, 7)
	if len(p1.Deliveries) != 1 || p1.Deliveries[0].Key != p2.Deliveries[0].Key {
		t.Fatalf("keys differ: %+v %+v", p1.Deliveries, p2.Deliveries)
	}
	p3 := c.Evaluate("default/other", a, nil, nil, 1)
	if p3.Deliveries[0].Key == p1.Deliveries[0].Key {
		t.Error("two apps share a key")
	}
}

func TestEvaluateProjectSubscriptions(t *testing.T) {
	c := planConfig(t)
	a := App{Name: "guestbook", Sync: "Synced", Health: "Healthy", Operation: op("Failed")}
	p := c.Evaluate("default/guestbook", a, map[string]string{AnnotationPrefix + "on-sync-failed.slack": "proj"}, nil, 0)
	if d := cmp.Diff([]dl{{TriggerSyncFailed, "slack:proj", t0.Format(time.RFC3339)}}, brief(p)); d != "" {
		t.Error(d)
	}
}

// Bad subscriptions are reported and nothing is sent to them; good ones
// still send.
func TestEvaluateRefusesBadSubscriptions(t *testing.T) {
	c := planConfig(t)
	many := make([]string, MaxRecipients+1)
	for i := range many {
		many[i] = fmt.Sprintf("c%d", i)
	}
	a := App{Name: "guestbook", Sync: "Synced", Health: "Degraded", Annotations: map[string]string{
		AnnotationPrefix + "on-degraded.pager": "x",
		AnnotationPrefix + "on-nothing.slack":  "x",
		AnnotationPrefix + "on-degraded.hook":  strings.Join(many, ";"),
		AnnotationPrefix + "on-degraded.slack": "ok",
	}}
	p := c.Evaluate("default/guestbook", a, nil, nil, 0)
	want := []string{
		fmt.Sprintf("app annotation %son-degraded.hook: %d recipients, over the limit of %d", AnnotationPrefix, MaxRecipients+1, MaxRecipients),
		fmt.Sprintf(`app annotation %son-degraded.pager: unknown service "pager"`, AnnotationPrefix),
		fmt.Sprintf(`app annotation %son-nothing.slack: unknown trigger "on-nothing"`, AnnotationPrefix),
	}
	if d := cmp.Diff(want, p.Problems); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]dl{{"on-degraded", "slack:ok", ""}}, brief(p)); d != "" {
		t.Errorf("deliveries (-want +got):\n%s", d)
	}
}

// The same bad subscriptions are refused by CheckSubscriptions, the check
// the API runs when an app or a project is saved; a good one passes.
func TestCheckSubscriptions(t *testing.T) {
	c := planConfig(t)
	many := make([]string, MaxRecipients+1)
	for i := range many {
		many[i] = fmt.Sprintf("c%d", i)
	}
	for _, tt := range []struct {
		name string
		ann  map[string]string
		want string
	}{
		{"good", map[string]string{AnnotationPrefix + "on-degraded.slack": "ok", "other": "x"}, ""},
		{"unknown service", map[string]string{AnnotationPrefix + "on-degraded.pager": "x"}, `on-degraded.pager: unknown service "pager"`},
		{"unknown trigger", map[string]string{AnnotationPrefix + "on-nothing.slack": "x"}, `on-nothing.slack: unknown trigger "on-nothing"`},
		{"recipients over the limit", map[string]string{AnnotationPrefix + "on-degraded.hook": strings.Join(many, ";")},
			fmt.Sprintf("%d recipients, over the limit of %d", MaxRecipients+1, MaxRecipients)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := c.CheckSubscriptions(tt.ann)
			if HasSubscriptions(tt.ann) != true {
				t.Error("HasSubscriptions is false")
			}
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "annotation "+AnnotationPrefix) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one about %q", err, tt.want)
			}
		})
	}
	if HasSubscriptions(map[string]string{"other": "x"}) {
		t.Error("HasSubscriptions without a subscription")
	}
}
