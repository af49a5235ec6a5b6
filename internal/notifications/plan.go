package notifications

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// AnnotationPrefix starts a subscription annotation on an app or a
// project: "<prefix><trigger>.<service>: <recipient>[;<recipient>...]", or
// "<prefix><service>" for the default triggers.
const AnnotationPrefix = "notifications.argoproj.io/subscribe."

// Destination is one recipient of one service.
type Destination struct {
	Service   string `json:"service"`
	Recipient string `json:"recipient,omitempty"`
}

func (d Destination) String() string { return d.Service + ":" + d.Recipient }

// Delivery is one notification to send: a template of a trigger's
// condition to one destination. Key is its idempotency key.
type Delivery struct {
	Key         string `json:"key"`
	App         string `json:"app"`
	Trigger     string `json:"trigger"`
	Condition   int    `json:"condition,omitempty"`
	Template    string `json:"template"`
	Service     string `json:"service"`
	ServiceType string `json:"serviceType"`
	Recipient   string `json:"recipient,omitempty"`
	OncePer     string `json:"oncePer,omitempty"`
}

// Plan is what one evaluation decided.
type Plan struct {
	Deliveries []Delivery `json:"deliveries,omitempty"`
	// State is the notified state to keep for the next evaluation.
	State map[string]string `json:"state,omitempty"`
	// Problems are subscriptions that were refused (nothing is sent to
	// them), sorted.
	Problems []string `json:"problems,omitempty"`
	// Off says no configuration is set: nothing was evaluated.
	Off bool `json:"off,omitempty"`
}

// subscriptions returns, per trigger, the destinations subscribed to it
// by the app's and the project's annotations and the default
// subscriptions. Bad subscriptions are reported and skipped.
func (c *Config) subscriptions(app App, project map[string]string) (map[string][]Destination, []string) {
	out := map[string][]Destination{}
	var problems []string
	add := func(trigger string, d Destination) {
		if !slices.Contains(out[trigger], d) {
			out[trigger] = append(out[trigger], d)
		}
	}
	for _, src := range []struct {
		what string
		ann  map[string]string
	}{{"app", app.Annotations}, {"project", project}} {
		for _, k := range sortedKeys(src.ann) {
			rest, ok := strings.CutPrefix(k, AnnotationPrefix)
			if !ok {
				continue
			}
			triggers, svc, rs, err := c.annotationSubscription(rest, src.ann[k])
			for _, t := range triggers {
				for _, r := range rs {
					add(t, Destination{Service: svc, Recipient: r})
				}
			}
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s annotation %s: %v", src.what, k, err))
			}
		}
	}
	for _, s := range c.Subscriptions {
		if !s.Selects(app.Labels) {
			continue
		}
		for _, r := range s.Recipients {
			svc, rcpt, _ := strings.Cut(r, ":")
			triggers := s.Triggers
			if len(triggers) == 0 {
				triggers = c.defaultTriggers(svc)
			}
			for _, t := range triggers {
				add(t, Destination{Service: svc, Recipient: rcpt})
			}
		}
	}
	slices.Sort(problems)
	return out, problems
}

func (c *Config) defaultTriggers(svc string) []string {
	if t, ok := c.ServiceDefaultTriggers[svc]; ok {
		return t
	}
	return c.DefaultTriggers
}

// annotationSubscription reads one subscription annotation: the part
// after AnnotationPrefix, and its value.
func (c *Config) annotationSubscription(rest, value string) (triggers []string, svc string, rs []string, err error) {
	if triggers, svc, err = c.annotationTarget(rest); err != nil {
		return nil, "", nil, err
	}
	if rs, err = recipients(value); err != nil {
		return nil, "", nil, err
	}
	return triggers, svc, rs, nil
}

// CheckSubscriptions reports each subscription annotation (of an app or a
// project) that names an unknown trigger or service, or too many
// recipients, so that it is refused when saved rather than skipped at
// every evaluation.
func (c *Config) CheckSubscriptions(annotations map[string]string) error {
	var errs []error
	for _, k := range sortedKeys(annotations) {
		if rest, ok := strings.CutPrefix(k, AnnotationPrefix); ok {
			if _, _, _, err := c.annotationSubscription(rest, annotations[k]); err != nil {
				errs = append(errs, fmt.Errorf("annotation %s: %w", k, err))
			}
		}
	}
	return errors.Join(errs...)
}

// HasSubscriptions says whether annotations hold a subscription.
func HasSubscriptions(annotations map[string]string) bool {
	for k := range annotations {
		if strings.HasPrefix(k, AnnotationPrefix) {
			return true
		}
	}
	return false
}

// annotationTarget reads "<trigger>.<service>" or "<service>".
func (c *Config) annotationTarget(rest string) ([]string, string, error) {
	trigger, svc, ok := strings.Cut(rest, ".")
	if !ok {
		svc, trigger = trigger, ""
	}
	if _, known := c.Services[svc]; !known {
		return nil, "", fmt.Errorf("unknown service %q", svc)
	}
	if trigger == "" {
		return c.defaultTriggers(svc), svc, nil
	}
	if _, known := c.Triggers[trigger]; !known {
		return nil, "", fmt.Errorf("unknown trigger %q", trigger)
	}
	return []string{trigger}, svc, nil
}

// recipients splits an annotation's value on ";" (and ",").
func recipients(v string) ([]string, error) {
	var out []string
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ';' || r == ',' }) {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		out = []string{""} // a service that needs no recipient (webhook, GitHub)
	}
	if len(out) > MaxRecipients {
		return nil, fmt.Errorf("%d recipients, over the limit of %d", len(out), MaxRecipients)
	}
	return out, nil
}

// Evaluate decides which notifications the app's state calls for. state
// is what the last evaluation returned: a condition with oncePer sends
// once per value, one without sends when it turns true. epoch tells
// apart the times a condition without oncePer turns true (the caller's
// pass count), so that each has its own idempotency key.
func (c *Config) Evaluate(appKey string, app App, project map[string]string, state map[string]string, epoch int) Plan {
	subs, problems := c.subscriptions(app, project)
	plan := Plan{State: map[string]string{}, Problems: problems}
	for _, tn := range sortedKeys(subs) {
		results, err := c.Triggers[tn].Run(app)
		if err != nil {
			plan.Problems = append(plan.Problems, err.Error())
			continue
		}
		for _, r := range results {
			cond := c.Triggers[tn].Conditions[r.Condition]
			for _, d := range subs[tn] {
				sk := tn + "[" + strconv.Itoa(r.Condition) + "]/" + d.String()
				last, seen := state[sk]
				var mark string
				switch {
				case cond.OncePer != "" && !r.Fired:
					if seen {
						plan.State[sk] = last
					}
					continue
				case !r.Fired:
					continue // re-armed
				case cond.OncePer != "":
					mark = "once:" + r.OncePer
				case seen:
					mark = last // still true since it fired
				default:
					mark = "since:" + strconv.Itoa(epoch)
				}
				plan.State[sk] = mark
				if seen && last == mark {
					continue
				}
				for _, tmpl := range r.Send {
					plan.Deliveries = append(plan.Deliveries, Delivery{
						Key: deliveryKey(appKey, tn, r.Condition, tmpl, d, mark), App: appKey,
						Trigger: tn, Condition: r.Condition, Template: tmpl,
						Service: d.Service, ServiceType: c.Services[d.Service].Type, Recipient: d.Recipient,
						OncePer: r.OncePer,
					})
				}
			}
		}
	}
	return plan
}

// deliveryKey is the idempotency key of one delivery: the same app,
// trigger, template, destination and oncePer value give the same key.
func deliveryKey(app, trigger string, cond int, tmpl string, d Destination, mark string) string {
	h := sha256.New()
	for _, s := range []string{app, trigger, strconv.Itoa(cond), tmpl, d.Service, d.Recipient, mark} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}
