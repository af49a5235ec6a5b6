package appset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/settings"
)

// Errors of Generate, besides ErrInvalid.
var (
	// ErrTooManyElements: a generator yields more elements than the limit.
	ErrTooManyElements = errors.New("too many elements")
	// ErrDuplicateApp: two elements yield the same app.
	ErrDuplicateApp = errors.New("duplicate application")
	// ErrSource: a service a generator reads (Git, a plugin, a provider's
	// API) failed or did not answer in time.
	ErrSource = errors.New("generator source failed")
	// ErrUnavailable: the generator needs something this Evaluator was
	// made without (a Git reader, a secret store, a cluster registry).
	ErrUnavailable = errors.New("generator not available")
)

// DefaultLimit is how many elements a set may yield by default.
const DefaultLimit = 10000

// Secret names that generators resolve by reference in the secret store:
// a plugin's settings (keys baseUrl, token, requestTimeout in seconds) and
// the tokens of tokenRef.
const (
	PluginSecretPrefix = "windlass-appset-plugin-"
	TokenSecretPrefix  = "windlass-scm-"
)

// DefaultPluginTimeout bounds a plugin's answer when its settings give
// no requestTimeout.
const DefaultPluginTimeout = 30 * time.Second

// ClusterLister lists the registered clusters.
type ClusterLister interface {
	Clusters(ctx context.Context) ([]settings.Cluster, error)
}

// GitTrees checks a repository out at a revision and returns the
// directory of its files, which stays readable while the call's context
// lives.
type GitTrees interface {
	Tree(ctx context.Context, repoURL, revision string) (string, error)
}

// SecretReader reads a secret of the secret store by name.
type SecretReader interface {
	Get(ctx context.Context, name string) (map[string][]byte, error)
}

// Evaluator turns sets into applications. Create it with New.
type Evaluator struct {
	clusters ClusterLister
	git      GitTrees
	secrets  SecretReader
	http     *http.Client
	limit    int
	// apis are the provider API addresses a token may be sent to, besides
	// the providers' public ones.
	apis []string
}

// Option configures New.
type Option func(*Evaluator)

// WithLimit sets how many elements a set may yield (default DefaultLimit).
func WithLimit(n int) Option {
	return func(g *Evaluator) {
		if n > 0 {
			g.limit = n
		}
	}
}

// WithHTTPClient sets the client of plugins and providers' APIs.
func WithHTTPClient(c *http.Client) Option {
	return func(g *Evaluator) {
		if c != nil {
			g.http = c
		}
	}
}

// WithAllowedAPIs adds provider API base URLs (GitHub Enterprise, a
// self-hosted GitLab or Gitea) that a tokenRef's token may be sent to.
// Without it a token goes only to api.github.com, gitlab.com or gitea.com,
// so that a set cannot send a stored token to a server of its choosing.
func WithAllowedAPIs(urls ...string) Option {
	return func(g *Evaluator) {
		for _, u := range urls {
			if u = strings.TrimSuffix(strings.TrimSpace(u), "/"); u != "" {
				g.apis = append(g.apis, u)
			}
		}
	}
}

// New makes an Evaluator. A nil dependency makes the generators that need
// it fail with a clear error.
func New(clusters ClusterLister, git GitTrees, secrets SecretReader, opts ...Option) *Evaluator {
	g := &Evaluator{clusters: clusters, git: git, secrets: secrets, http: &http.Client{Timeout: 2 * time.Minute}, limit: DefaultLimit}
	for _, o := range opts {
		o(g)
	}
	return g
}

// App is one application a set yields.
type App struct {
	Application appspec.Application `json:"application"`
	// Generator is the field of the generator that yielded it and Element
	// its index there.
	Generator string `json:"generator"`
	Element   int    `json:"element"`
}

// Generate evaluates the set's generators and renders its template for
// each element. It writes nothing.
func (g *Evaluator) Generate(ctx context.Context, set ApplicationSet) ([]App, error) {
	if err := set.Validate(); err != nil {
		return nil, err
	}
	ev := &evaluation{g: g, set: set, r: newRenderer(set.Spec.GoTemplate, set.Spec.GoTemplateOptions)}
	var apps []App
	byName := map[string]App{}
	for i, gen := range set.Spec.Generators {
		field := fmt.Sprintf("spec.generators[%d]", i)
		params, err := ev.eval(ctx, gen, field, nil)
		if err != nil {
			return nil, err
		}
		tmpl := Template(deepCopy(set.Spec.Template))
		if t := gen.template(); len(t) > 0 {
			mergeInto(tmpl, t)
		}
		for j, p := range params {
			app, err := ev.application(tmpl, p)
			if err != nil {
				return nil, fmt.Errorf("%s element %d: %w", field, j, err)
			}
			a := App{Application: app, Generator: field, Element: j}
			key := app.Project + "/" + app.Name
			if prev, ok := byName[app.Name]; ok {
				return nil, fmt.Errorf("%w: %s element %d and %s element %d both yield app %s", ErrDuplicateApp,
					prev.Generator, prev.Element, field, j, key)
			}
			byName[app.Name] = a
			apps = append(apps, a)
		}
		if len(apps) > g.limit {
			return nil, fmt.Errorf("%w: the set yields more than %d apps", ErrTooManyElements, g.limit)
		}
	}
	return apps, nil
}

// evaluation is one run of Generate.
type evaluation struct {
	g   *Evaluator
	set ApplicationSet
	r   *renderer
}

func (ev *evaluation) application(tmpl Template, p Params) (appspec.Application, error) {
	obj, err := ev.r.app(tmpl, ev.set.Spec.TemplatePatch, p)
	if err != nil {
		return appspec.Application{}, fmt.Errorf("%w: template: %w", ErrInvalid, err)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return appspec.Application{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	app, err := appspec.ParseApplication(b)
	if err != nil {
		name, _ := obj["metadata"].(map[string]any)["name"].(string)
		return appspec.Application{}, fmt.Errorf("%w: rendered application %q: %w", ErrInvalid, name, err)
	}
	return app, nil
}

// template is the generator's own template, if any.
func (g Generator) template() Template {
	switch {
	case g.List != nil:
		return g.List.Template
	case g.Clusters != nil:
		return g.Clusters.Template
	case g.Git != nil:
		return g.Git.Template
	case g.Matrix != nil:
		return g.Matrix.Template
	case g.Merge != nil:
		return g.Merge.Template
	case g.Plugin != nil:
		return g.Plugin.Template
	case g.PullRequest != nil:
		return g.PullRequest.Template
	case g.SCMProvider != nil:
		return g.SCMProvider.Template
	}
	return nil
}

// eval yields a generator's parameter sets. parent, when set, are the
// parameters a matrix's first generator gave, which the generator's spec
// may name.
func (ev *evaluation) eval(ctx context.Context, gen Generator, field string, parent Params) ([]Params, error) {
	if parent != nil {
		var rendered Generator
		if err := ev.r.renderJSON(gen, &rendered, parent); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, field, err)
		}
		gen = rendered
	}
	var (
		out []Params
		err error
	)
	switch {
	case gen.List != nil:
		out, err = ev.list(gen.List, field+".list")
	case gen.Clusters != nil:
		out, err = ev.clusters(ctx, gen.Clusters)
	case gen.Git != nil:
		out, err = ev.gitParams(ctx, gen.Git, field+".git")
	case gen.Matrix != nil:
		out, err = ev.matrix(ctx, gen.Matrix, field+".matrix")
	case gen.Merge != nil:
		out, err = ev.merge(ctx, gen.Merge, field+".merge")
	case gen.Plugin != nil:
		out, err = ev.plugin(ctx, gen.Plugin, field+".plugin")
	case gen.PullRequest != nil:
		out, err = ev.pullRequests(ctx, gen.PullRequest, field+".pullRequest")
	case gen.SCMProvider != nil:
		out, err = ev.scmProvider(ctx, gen.SCMProvider, field+".scmProvider")
	default:
		err = invalid(field, "no generator")
	}
	if err != nil {
		return nil, err
	}
	if len(out) > ev.g.limit {
		return nil, fmt.Errorf("%w: %s yields %d elements, more than the limit of %d", ErrTooManyElements, field, len(out), ev.g.limit)
	}
	if gen.Selector == nil {
		return out, nil
	}
	kept := out[:0]
	for _, p := range out {
		ok, err := gen.Selector.matches(p.flat())
		if err != nil {
			return nil, fmt.Errorf("%s.selector: %w", field, err)
		}
		if ok {
			kept = append(kept, p)
		}
	}
	return kept, nil
}

func (ev *evaluation) list(l *ListGenerator, field string) ([]Params, error) {
	elems := l.Elements
	if l.ElementsYAML != "" {
		var more []map[string]any
		if err := yaml.Unmarshal([]byte(l.ElementsYAML), &more); err != nil {
			return nil, invalid(field+".elementsYaml", "%v", err)
		}
		elems = append(append([]map[string]any(nil), elems...), more...)
	}
	out := make([]Params, 0, len(elems))
	for _, e := range elems {
		out = append(out, Params(deepCopy(e)))
	}
	return out, nil
}
