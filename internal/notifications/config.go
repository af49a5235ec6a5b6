package notifications

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// MaxRecipients bounds the recipients of one subscription: a list longer
// than this is refused rather than fanned out.
const MaxRecipients = 20

// Service types Windlass delivers to.
const (
	TypeWebhook = "webhook"
	TypeSlack   = "slack"
	TypeEmail   = "email"
	TypeGitHub  = "github"
	TypeTeams   = "teams"
)

var serviceTypes = []string{TypeEmail, TypeGitHub, TypeSlack, TypeTeams, TypeWebhook}

// ErrInvalid wraps every error Parse returns.
var ErrInvalid = errors.New("invalid notifications configuration")

// Config is a parsed and validated notifications configuration.
type Config struct {
	Triggers  map[string]Trigger
	Templates map[string]*Template
	Services  map[string]Service
	// Subscriptions are the default subscriptions, for every app they
	// select.
	Subscriptions []Subscription
	// DefaultTriggers are the triggers of a subscription that names none;
	// ServiceDefaultTriggers override them per service.
	DefaultTriggers        []string
	ServiceDefaultTriggers map[string][]string
	// Context is free-form values templates read as .context.
	Context map[string]string
	// Data is the configuration as given, for export.
	Data map[string]string
}

// Subscription sends a set of triggers to recipients of services.
type Subscription struct {
	Recipients []string `json:"recipients"`
	Triggers   []string `json:"triggers,omitempty"`
	Selector   string   `json:"selector,omitempty"`
	selector   labels.Selector
}

// Selects reports whether the subscription applies to an app's labels.
func (s Subscription) Selects(l map[string]string) bool {
	return s.selector == nil || s.selector.Matches(labels.Set(l))
}

// KeyError is a problem with one key of the configuration.
type KeyError struct {
	Key string
	Err error
}

func (e *KeyError) Error() string { return e.Key + ": " + e.Err.Error() }
func (e *KeyError) Unwrap() error { return e.Err }

// fieldErr names the configuration key a problem is in.
func fieldErr(key string, err error) error {
	return &KeyError{Key: key, Err: err}
}

// KeyErrors lists the problems of a Parse error by key, in order; none
// when the error names no key.
func KeyErrors(err error) []*KeyError {
	switch u := err.(type) {
	case nil:
		return nil
	case *KeyError:
		return []*KeyError{u}
	case interface{ Unwrap() []error }:
		var out []*KeyError
		for _, e := range u.Unwrap() {
			out = append(out, KeyErrors(e)...)
		}
		return out
	case interface{ Unwrap() error }:
		return KeyErrors(u.Unwrap())
	}
	return nil
}

// Parse reads the data of an argocd-notifications-cm ConfigMap. The
// built-in triggers are added unless the data defines one of the same
// name. Every problem is reported, each under its key, wrapping ErrInvalid.
func Parse(data map[string]string) (*Config, error) {
	c := &Config{
		Triggers:               map[string]Trigger{},
		Templates:              map[string]*Template{},
		Services:               map[string]Service{},
		ServiceDefaultTriggers: map[string][]string{},
		Context:                map[string]string{},
		Data:                   data,
	}
	var errs []error
	keys := sortedKeys(data)
	// Services and templates first: triggers and subscriptions refer to them.
	for _, k := range keys {
		v := data[k]
		var err error
		switch {
		case strings.HasPrefix(k, "service."):
			err = c.addService(k, v)
		case strings.HasPrefix(k, "template."):
			err = c.addTemplate(strings.TrimPrefix(k, "template."), v)
		case k == "context":
			err = yaml.UnmarshalStrict([]byte(v), &c.Context)
		case strings.HasPrefix(k, "trigger."), k == "subscriptions", k == "defaultTriggers",
			strings.HasPrefix(k, "defaultTriggers."):
		default:
			err = errors.New("this key is not supported (supported: trigger.<name>, template.<name>, service.<type>[.<name>], subscriptions, defaultTriggers, context)")
		}
		if err != nil {
			errs = append(errs, fieldErr(k, err))
		}
	}
	c.addBuiltinTemplates()
	for _, k := range keys {
		if name, ok := strings.CutPrefix(k, "trigger."); ok {
			if err := c.addTrigger(name, data[k]); err != nil {
				errs = append(errs, fieldErr(k, err))
			}
		}
	}
	for name, t := range builtinTriggers() {
		if _, ok := c.Triggers[name]; !ok {
			c.Triggers[name] = t
		}
	}
	for _, k := range keys {
		var err error
		switch {
		case k == "subscriptions":
			err = c.addSubscriptions(data[k])
		case k == "defaultTriggers":
			c.DefaultTriggers, err = c.triggerList(data[k])
		case strings.HasPrefix(k, "defaultTriggers."):
			svc := strings.TrimPrefix(k, "defaultTriggers.")
			if _, ok := c.Services[svc]; !ok {
				err = fmt.Errorf("unknown service %q", svc)
				break
			}
			c.ServiceDefaultTriggers[svc], err = c.triggerList(data[k])
		}
		if err != nil {
			errs = append(errs, fieldErr(k, err))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, errors.Join(errs...))
	}
	return c, nil
}

// ParseFile reads a configuration from a YAML file: an
// argocd-notifications-cm ConfigMap, or its data map alone.
func ParseFile(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read notifications config: %w", err)
	}
	data, err := DecodeData(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return Parse(data)
}

// DecodeData returns the data of a ConfigMap in YAML or JSON, or of a
// plain map of strings.
func DecodeData(b []byte) (map[string]string, error) {
	var probe struct {
		Kind string `json:"kind"`
	}
	_ = yaml.Unmarshal(b, &probe)
	if probe.Kind != "" {
		var cm struct {
			Kind string            `json:"kind"`
			Data map[string]string `json:"data"`
		}
		if err := yaml.Unmarshal(b, &cm); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		if cm.Kind != "ConfigMap" {
			return nil, fmt.Errorf("%w: kind %s is not supported (want a ConfigMap)", ErrInvalid, cm.Kind)
		}
		return cm.Data, nil
	}
	var data map[string]string
	if err := yaml.Unmarshal(b, &data); err != nil {
		return nil, fmt.Errorf("%w: want a map of strings: %w", ErrInvalid, err)
	}
	return data, nil
}

func (c *Config) addSubscriptions(v string) error {
	var subs []Subscription
	if err := yaml.UnmarshalStrict([]byte(v), &subs); err != nil {
		return err
	}
	var errs []error
	for i, s := range subs {
		if s.Selector != "" {
			sel, err := labels.Parse(s.Selector)
			if err != nil {
				errs = append(errs, fmt.Errorf("[%d].selector: %w", i, err))
			}
			s.selector = sel
		}
		if _, err := c.triggerList(strings.Join(s.Triggers, ",")); err != nil && len(s.Triggers) > 0 {
			errs = append(errs, fmt.Errorf("[%d].triggers: %w", i, err))
		}
		if err := c.checkRecipients(s.Recipients); err != nil {
			errs = append(errs, fmt.Errorf("[%d].recipients: %w", i, err))
		}
		subs[i] = s
	}
	c.Subscriptions = subs
	return errors.Join(errs...)
}

// checkRecipients checks "<service>:<recipient>" entries.
func (c *Config) checkRecipients(rs []string) error {
	if len(rs) == 0 {
		return errors.New("no recipients")
	}
	if len(rs) > MaxRecipients {
		return fmt.Errorf("%d recipients, over the limit of %d", len(rs), MaxRecipients)
	}
	for _, r := range rs {
		svc, _, _ := strings.Cut(r, ":")
		if _, ok := c.Services[svc]; !ok {
			return fmt.Errorf("recipient %q: unknown service %q", r, svc)
		}
	}
	return nil
}

// triggerList reads a YAML list (or a comma-separated line) of trigger
// names and checks that each exists.
func (c *Config) triggerList(v string) ([]string, error) {
	var names []string
	if err := yaml.Unmarshal([]byte(v), &names); err != nil {
		names = nil
		for n := range strings.SplitSeq(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
	}
	for _, n := range names {
		if _, ok := c.Triggers[n]; !ok {
			return nil, fmt.Errorf("unknown trigger %q", n)
		}
	}
	return names, nil
}

// TriggerNames returns the trigger names, sorted.
func (c *Config) TriggerNames() []string { return sortedKeys(c.Triggers) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
