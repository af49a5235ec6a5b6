package notifications

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"sigs.k8s.io/yaml"
)

// Template is a message and its per-service fields. Every string is a Go
// template over .app, .context, .serviceType and .recipient, with sprig's
// functions and Argo CD's .time, .strings and .repo helpers.
type Template struct {
	Message string                     `json:"message,omitempty"`
	Title   string                     `json:"title,omitempty"`
	Slack   *SlackTemplate             `json:"slack,omitempty"`
	Email   *EmailTemplate             `json:"email,omitempty"`
	Webhook map[string]WebhookTemplate `json:"webhook,omitempty"`
	GitHub  *GitHubTemplate            `json:"github,omitempty"`
	Teams   *TeamsTemplate             `json:"teams,omitempty"`

	fields map[string]*template.Template
}

// SlackTemplate holds Slack attachments and blocks as JSON text.
type SlackTemplate struct {
	Attachments     string `json:"attachments,omitempty"`
	Blocks          string `json:"blocks,omitempty"`
	GroupingKey     string `json:"groupingKey,omitempty"`
	NotifyBroadcast bool   `json:"notifyBroadcast,omitempty"`
}

// EmailTemplate is a mail's subject (the message is its body).
type EmailTemplate struct {
	Subject string `json:"subject,omitempty"`
}

// WebhookTemplate is the request sent to one webhook service.
type WebhookTemplate struct {
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`
	Body   string `json:"body,omitempty"`
}

// GitHubTemplate sets a commit status and/or creates a deployment.
type GitHubTemplate struct {
	// RepoURLPath and RevisionPath say where the repository and the
	// commit are; they default to the app's source and synced revision.
	RepoURLPath  string            `json:"repoURLPath,omitempty"`
	RevisionPath string            `json:"revisionPath,omitempty"`
	Status       *GitHubStatus     `json:"status,omitempty"`
	Deployment   *GitHubDeployment `json:"deployment,omitempty"`
}

// GitHubStatus is a commit status.
type GitHubStatus struct {
	State     string `json:"state"`
	Label     string `json:"label,omitempty"`
	TargetURL string `json:"targetURL,omitempty"`
}

// GitHubDeployment is a deployment and its status.
type GitHubDeployment struct {
	State            string   `json:"state"`
	Environment      string   `json:"environment,omitempty"`
	EnvironmentURL   string   `json:"environmentURL,omitempty"`
	LogURL           string   `json:"logURL,omitempty"`
	Reference        string   `json:"reference,omitempty"`
	RequiredContexts []string `json:"requiredContexts,omitempty"`
	AutoMerge        *bool    `json:"autoMerge,omitempty"`
}

// TeamsTemplate is an adaptive card's title and facts.
type TeamsTemplate struct {
	Title string `json:"title,omitempty"`
	// Facts is a JSON list of {"name","value"} objects.
	Facts string `json:"facts,omitempty"`
}

// funcMap is sprig's text functions without those that read the process
// environment (a template must not reveal the worker's secrets).
func funcMap() template.FuncMap {
	fm := sprig.TxtFuncMap()
	delete(fm, "env")
	delete(fm, "expandenv")
	return fm
}

func parseTemplate(name, v string) (*Template, error) {
	t := &Template{}
	if err := yaml.UnmarshalStrict([]byte(v), t); err != nil {
		return nil, err
	}
	if err := t.compile(name); err != nil {
		return nil, err
	}
	return t, nil
}

// compile parses every string field; a field that does not parse is an
// error now rather than at delivery.
func (t *Template) compile(name string) error {
	tree, err := toTree(t)
	if err != nil {
		return err
	}
	t.fields = map[string]*template.Template{}
	var errs []error
	walkStrings(tree, "", func(path, s string) {
		p, err := template.New(name + "." + path).Funcs(funcMap()).Option("missingkey=zero").Parse(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s does not parse: %w", path, err))
			return
		}
		t.fields[path] = p
	})
	return errors.Join(errs...)
}

func (c *Config) addTemplate(name, v string) error {
	t, err := parseTemplate(name, v)
	if err != nil {
		return err
	}
	for svc := range t.Webhook {
		if s, ok := c.Services[svc]; !ok || s.Type != TypeWebhook {
			return fmt.Errorf("webhook.%s: unknown service %q (not a configured webhook)", svc, svc)
		}
	}
	c.Templates[name] = t
	return nil
}

func toTree(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var tree any
	return tree, json.Unmarshal(b, &tree)
}

// walkStrings calls fn for each string leaf, in a fixed order.
func walkStrings(v any, path string, fn func(path, s string)) {
	switch x := v.(type) {
	case string:
		fn(path, x)
	case map[string]any:
		for _, k := range sortedKeys(x) {
			walkStrings(x[k], joinPath(path, k), fn)
		}
	case []any:
		for i, e := range x {
			walkStrings(e, fmt.Sprintf("%s[%d]", path, i), fn)
		}
	}
}

func joinPath(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

// Vars are what a template renders against.
type Vars struct {
	App         App
	Context     map[string]string
	ServiceType string
	Recipient   string
}

func (v Vars) data() map[string]any {
	return map[string]any{
		"app":         v.App.View(),
		"context":     stringMap(v.Context),
		"serviceType": v.ServiceType,
		"recipient":   v.Recipient,
		"time":        timeFuncs(),
		"strings":     stringFuncs(),
		"repo":        repoFuncs(),
	}
}

func repoFuncs() map[string]any {
	return map[string]any{
		"RepoURLToHTTPS":    repoURLToHTTPS,
		"FullNameByRepoURL": fullNameByRepoURL,
	}
}

// repoURLToHTTPS turns git@host:org/repo.git into https://host/org/repo.
func repoURLToHTTPS(u string) string {
	if rest, ok := strings.CutPrefix(u, "git@"); ok {
		host, path, _ := strings.Cut(rest, ":")
		u = "https://" + host + "/" + path
	} else if pu, err := url.Parse(u); err == nil && pu.Scheme == "ssh" {
		pu.Scheme, pu.User = "https", nil
		u = pu.String()
	}
	return strings.TrimSuffix(u, ".git")
}

// fullNameByRepoURL returns "org/repo" of a repository URL.
func fullNameByRepoURL(u string) string {
	pu, err := url.Parse(repoURLToHTTPS(u))
	if err != nil {
		return ""
	}
	return strings.Trim(pu.Path, "/")
}

// Render executes every field of the template and returns the rendered
// copy.
func (t *Template) Render(v Vars) (Template, error) {
	tree, err := toTree(t)
	if err != nil {
		return Template{}, err
	}
	data := v.data()
	var errs []error
	tree = mapStrings(tree, "", func(path, s string) string {
		p := t.fields[path]
		if p == nil {
			return s
		}
		var buf bytes.Buffer
		if err := p.Execute(&buf, data); err != nil {
			errs = append(errs, fmt.Errorf("render %s: %w", path, err))
		}
		return strings.ReplaceAll(buf.String(), "<no value>", "")
	})
	if err := errors.Join(errs...); err != nil {
		return Template{}, err
	}
	b, err := json.Marshal(tree)
	if err != nil {
		return Template{}, err
	}
	var out Template
	return out, json.Unmarshal(b, &out)
}

func mapStrings(v any, path string, fn func(path, s string) string) any {
	switch x := v.(type) {
	case string:
		return fn(path, x)
	case map[string]any:
		for k, e := range x {
			x[k] = mapStrings(e, joinPath(path, k), fn)
		}
	case []any:
		for i, e := range x {
			x[i] = mapStrings(e, fmt.Sprintf("%s[%d]", path, i), fn)
		}
	}
	return v
}
