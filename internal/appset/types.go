package appset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// Argo CD's group version and kind of an ApplicationSet.
const (
	APIVersion = "argoproj.io/v1alpha1"
	Kind       = "ApplicationSet"
)

// ErrInvalid marks a set that cannot be read or evaluated as given.
var ErrInvalid = errors.New("invalid application set")

// ApplicationSet is an Argo CD ApplicationSet as Windlass reads it.
type ApplicationSet struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   Metadata        `json:"metadata"`
	Spec       Spec            `json:"spec"`
	Status     json.RawMessage `json:"status,omitempty"`
}

// Metadata is the set's object metadata; other fields are ignored.
type Metadata struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// UnmarshalJSON reads the fields above and ignores the rest of the
// metadata (uid, resourceVersion, managedFields...).
func (m *Metadata) UnmarshalJSON(b []byte) error {
	type plain Metadata
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*m = Metadata(p)
	return nil
}

// Spec is the set's spec.
type Spec struct {
	GoTemplate        bool        `json:"goTemplate,omitempty"`
	GoTemplateOptions []string    `json:"goTemplateOptions,omitempty"`
	Generators        []Generator `json:"generators"`
	Template          Template    `json:"template"`
	// TemplatePatch is a templated YAML merged over each rendered app.
	TemplatePatch                string             `json:"templatePatch,omitempty"`
	SyncPolicy                   *SyncPolicy        `json:"syncPolicy,omitempty"`
	IgnoreApplicationDifferences []IgnoreDifference `json:"ignoreApplicationDifferences,omitempty"`
	Strategy                     *Strategy          `json:"strategy,omitempty"`
	PreservedFields              *PreservedFields   `json:"preservedFields,omitempty"`
	ApplyNestedSelectors         bool               `json:"applyNestedSelectors,omitempty"`
}

// Template is an Application template: its metadata and spec, kept as
// generic JSON so that any string in it may hold placeholders.
type Template map[string]any

// SyncPolicy says what the set may do to its apps.
type SyncPolicy struct {
	// ApplicationsSync is create-only, create-update, create-delete or
	// sync (the default).
	ApplicationsSync            string `json:"applicationsSync,omitempty"`
	PreserveResourcesOnDeletion bool   `json:"preserveResourcesOnDeletion,omitempty"`
}

// Policies of SyncPolicy.ApplicationsSync.
const (
	PolicyCreateOnly   = "create-only"
	PolicyCreateUpdate = "create-update"
	PolicyCreateDelete = "create-delete"
	PolicySync         = "sync"
)

// IgnoreDifference names app fields the set leaves as they are.
type IgnoreDifference struct {
	Name              string   `json:"name,omitempty"`
	JSONPointers      []string `json:"jsonPointers,omitempty"`
	JQPathExpressions []string `json:"jqPathExpressions,omitempty"`
}

// PreservedFields are app annotations and labels the set does not own.
type PreservedFields struct {
	Annotations []string `json:"annotations,omitempty"`
	Labels      []string `json:"labels,omitempty"`
}

// Generator is one generator: exactly one of its kinds is set.
type Generator struct {
	List        *ListGenerator        `json:"list,omitempty"`
	Clusters    *ClustersGenerator    `json:"clusters,omitempty"`
	Git         *GitGenerator         `json:"git,omitempty"`
	Matrix      *CombineGenerator     `json:"matrix,omitempty"`
	Merge       *CombineGenerator     `json:"merge,omitempty"`
	Plugin      *PluginGenerator      `json:"plugin,omitempty"`
	PullRequest *PullRequestGenerator `json:"pullRequest,omitempty"`
	SCMProvider *SCMProviderGenerator `json:"scmProvider,omitempty"`
	// ClusterDecisionResource is Argo CD's, which Windlass does not build.
	ClusterDecisionResource json.RawMessage `json:"clusterDecisionResource,omitempty"`
	// Selector filters the generator's parameter sets.
	Selector *LabelSelector `json:"selector,omitempty"`
}

// ListGenerator yields its elements.
type ListGenerator struct {
	Elements     []map[string]any `json:"elements,omitempty"`
	ElementsYAML string           `json:"elementsYaml,omitempty"`
	Template     Template         `json:"template,omitempty"`
}

// ClustersGenerator yields the registered clusters its selector matches.
type ClustersGenerator struct {
	Selector LabelSelector     `json:"selector,omitempty"`
	Values   map[string]string `json:"values,omitempty"`
	Template Template          `json:"template,omitempty"`
	FlatList bool              `json:"flatList,omitempty"`
}

// GitGenerator yields a repository's directories or files.
type GitGenerator struct {
	RepoURL             string         `json:"repoURL"`
	Revision            string         `json:"revision,omitempty"`
	Directories         []GitPath      `json:"directories,omitempty"`
	Files               []GitPath      `json:"files,omitempty"`
	PathParamPrefix     string         `json:"pathParamPrefix,omitempty"`
	Values              map[string]any `json:"values,omitempty"`
	RequeueAfterSeconds *int64         `json:"requeueAfterSeconds,omitempty"`
	Template            Template       `json:"template,omitempty"`
}

// GitPath is a path glob; Exclude drops what it matches.
type GitPath struct {
	Path    string `json:"path"`
	Exclude bool   `json:"exclude,omitempty"`
}

// CombineGenerator is a matrix (exactly two generators) or a merge (by
// MergeKeys).
type CombineGenerator struct {
	Generators []Generator `json:"generators"`
	MergeKeys  []string    `json:"mergeKeys,omitempty"`
	Template   Template    `json:"template,omitempty"`
}

// PluginGenerator asks an HTTP service for parameter sets.
type PluginGenerator struct {
	ConfigMapRef        NameRef        `json:"configMapRef"`
	Input               PluginInput    `json:"input,omitempty"`
	Values              map[string]any `json:"values,omitempty"`
	RequeueAfterSeconds *int64         `json:"requeueAfterSeconds,omitempty"`
	Template            Template       `json:"template,omitempty"`
}

// PluginInput is sent to the plugin.
type PluginInput struct {
	Parameters map[string]any `json:"parameters,omitempty"`
}

// NameRef names an object.
type NameRef struct {
	Name string `json:"name"`
}

// SecretRef names a key of a secret holding a token.
type SecretRef struct {
	SecretName string `json:"secretName"`
	Key        string `json:"key"`
}

// PullRequestGenerator yields a repository's open pull requests.
type PullRequestGenerator struct {
	GitHub              *RepoProvider       `json:"github,omitempty"`
	GitLab              *RepoProvider       `json:"gitlab,omitempty"`
	Gitea               *RepoProvider       `json:"gitea,omitempty"`
	Filters             []PullRequestFilter `json:"filters,omitempty"`
	RequeueAfterSeconds *int64              `json:"requeueAfterSeconds,omitempty"`
	Template            Template            `json:"template,omitempty"`
}

// RepoProvider is one repository on a provider. GitHub and Gitea name it
// by Owner and Repo, GitLab by Project (an ID or a path).
type RepoProvider struct {
	Owner            string     `json:"owner,omitempty"`
	Repo             string     `json:"repo,omitempty"`
	Project          string     `json:"project,omitempty"`
	API              string     `json:"api,omitempty"`
	TokenRef         *SecretRef `json:"tokenRef,omitempty"`
	Labels           []string   `json:"labels,omitempty"`
	PullRequestState string     `json:"pullRequestState,omitempty"`
	Insecure         bool       `json:"insecure,omitempty"`
}

// PullRequestFilter keeps the pull requests whose branches match.
type PullRequestFilter struct {
	BranchMatch       *string `json:"branchMatch,omitempty"`
	TargetBranchMatch *string `json:"targetBranchMatch,omitempty"`
	TitleMatch        *string `json:"titleMatch,omitempty"`
}

// SCMProviderGenerator yields the repositories of an organization.
type SCMProviderGenerator struct {
	GitHub              *OrgProvider   `json:"github,omitempty"`
	GitLab              *OrgProvider   `json:"gitlab,omitempty"`
	Gitea               *OrgProvider   `json:"gitea,omitempty"`
	Filters             []SCMFilter    `json:"filters,omitempty"`
	CloneProtocol       string         `json:"cloneProtocol,omitempty"`
	Values              map[string]any `json:"values,omitempty"`
	RequeueAfterSeconds *int64         `json:"requeueAfterSeconds,omitempty"`
	Template            Template       `json:"template,omitempty"`
}

// OrgProvider is an organization (GitHub), group (GitLab) or owner
// (Gitea) on a provider.
type OrgProvider struct {
	Organization     string     `json:"organization,omitempty"`
	Group            string     `json:"group,omitempty"`
	Owner            string     `json:"owner,omitempty"`
	API              string     `json:"api,omitempty"`
	TokenRef         *SecretRef `json:"tokenRef,omitempty"`
	AllBranches      bool       `json:"allBranches,omitempty"`
	IncludeSubgroups bool       `json:"includeSubgroups,omitempty"`
	Insecure         bool       `json:"insecure,omitempty"`
}

// SCMFilter keeps the repositories and branches that match.
type SCMFilter struct {
	RepositoryMatch *string  `json:"repositoryMatch,omitempty"`
	LabelMatch      *string  `json:"labelMatch,omitempty"`
	BranchMatch     *string  `json:"branchMatch,omitempty"`
	PathsExist      []string `json:"pathsExist,omitempty"`
	PathsDoNotExist []string `json:"pathsDoNotExist,omitempty"`
}

// LabelSelector is a Kubernetes label selector.
type LabelSelector struct {
	MatchLabels      map[string]string `json:"matchLabels,omitempty"`
	MatchExpressions []Requirement     `json:"matchExpressions,omitempty"`
}

// Requirement is one expression of a LabelSelector.
type Requirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// Parse reads an ApplicationSet from YAML or JSON. Fields Windlass does
// not know are errors; so are generators it does not build.
func Parse(data []byte) (ApplicationSet, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return ApplicationSet{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var s ApplicationSet
	if err := dec.Decode(&s); err != nil {
		return ApplicationSet{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := s.Validate(); err != nil {
		return ApplicationSet{}, err
	}
	return s, nil
}

// Validate checks what can be checked before evaluation.
func (s ApplicationSet) Validate() error {
	switch {
	case s.APIVersion != APIVersion || s.Kind != Kind:
		return invalid("apiVersion/kind", "want %s %s, got %q %q", APIVersion, Kind, s.APIVersion, s.Kind)
	case s.Metadata.Name == "":
		return invalid("metadata.name", "is required")
	case len(s.Spec.Generators) == 0:
		return invalid("spec.generators", "at least one generator is required")
	case s.Spec.TemplatePatch != "" && !s.Spec.GoTemplate:
		return invalid("spec.templatePatch", "needs goTemplate: true")
	}
	if err := s.Spec.Strategy.validate("spec.strategy"); err != nil {
		return err
	}
	if p := s.Spec.SyncPolicy; p != nil {
		switch p.ApplicationsSync {
		case "", PolicyCreateOnly, PolicyCreateUpdate, PolicyCreateDelete, PolicySync:
		default:
			return invalid("spec.syncPolicy.applicationsSync", "%q: want create-only, create-update, create-delete or sync", p.ApplicationsSync)
		}
	}
	for _, o := range s.Spec.GoTemplateOptions {
		if !strings.HasPrefix(o, "missingkey=") {
			return invalid("spec.goTemplateOptions", "%q: only missingkey=... is supported", o)
		}
	}
	for i, g := range s.Spec.Generators {
		if err := g.validate(fmt.Sprintf("spec.generators[%d]", i), 0); err != nil {
			return err
		}
	}
	return nil
}

// maxNesting bounds how deep matrix and merge generators nest.
const maxNesting = 3

func (g Generator) validate(field string, depth int) error {
	n := 0
	for _, set := range []bool{g.List != nil, g.Clusters != nil, g.Git != nil, g.Matrix != nil, g.Merge != nil,
		g.Plugin != nil, g.PullRequest != nil, g.SCMProvider != nil, len(g.ClusterDecisionResource) > 0} {
		if set {
			n++
		}
	}
	switch {
	case n != 1:
		return invalid(field, "set exactly one generator, got %d", n)
	case len(g.ClusterDecisionResource) > 0:
		return invalid(field+".clusterDecisionResource", "not implemented by Windlass")
	case g.Git != nil:
		return g.Git.validate(field + ".git")
	case g.Plugin != nil && g.Plugin.ConfigMapRef.Name == "":
		return invalid(field+".plugin.configMapRef.name", "is required")
	case g.PullRequest != nil:
		return g.PullRequest.validate(field + ".pullRequest")
	case g.SCMProvider != nil:
		return g.SCMProvider.validate(field + ".scmProvider")
	}
	for kind, c := range map[string]*CombineGenerator{"matrix": g.Matrix, "merge": g.Merge} {
		if c == nil {
			continue
		}
		f := field + "." + kind
		switch {
		case depth+1 >= maxNesting:
			return invalid(f, "nested more than %d deep", maxNesting)
		case kind == "matrix" && len(c.Generators) != 2:
			return invalid(f+".generators", "a matrix takes exactly 2 generators, got %d", len(c.Generators))
		case kind == "merge" && len(c.Generators) < 2:
			return invalid(f+".generators", "a merge takes at least 2 generators, got %d", len(c.Generators))
		case kind == "merge" && len(c.MergeKeys) == 0:
			return invalid(f+".mergeKeys", "at least one merge key is required")
		}
		for i, child := range c.Generators {
			if err := child.validate(fmt.Sprintf("%s.generators[%d]", f, i), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

func (g *GitGenerator) validate(field string) error {
	switch {
	case g.RepoURL == "":
		return invalid(field+".repoURL", "is required")
	case (len(g.Directories) == 0) == (len(g.Files) == 0):
		return invalid(field, "set either directories or files")
	}
	for i, f := range g.Files {
		if f.Path == "" {
			return invalid(fmt.Sprintf("%s.files[%d].path", field, i), "is required")
		}
	}
	return nil
}

// oneProvider checks that exactly one provider is set.
func oneProvider[T any](field string, providers ...*T) error {
	n := 0
	for _, p := range providers {
		if p != nil {
			n++
		}
	}
	if n != 1 {
		return invalid(field, "set exactly one of github, gitlab or gitea (other providers are not implemented)")
	}
	return nil
}

func (p *PullRequestGenerator) validate(field string) error {
	return oneProvider(field, p.GitHub, p.GitLab, p.Gitea)
}

func (p *SCMProviderGenerator) validate(field string) error {
	if err := oneProvider(field, p.GitHub, p.GitLab, p.Gitea); err != nil {
		return err
	}
	for i, f := range p.Filters {
		if len(f.PathsExist) > 0 || len(f.PathsDoNotExist) > 0 {
			return invalid(fmt.Sprintf("%s.filters[%d]", field, i), "pathsExist and pathsDoNotExist are not implemented")
		}
	}
	switch p.CloneProtocol {
	case "", "https", "ssh":
	default:
		return invalid(field+".cloneProtocol", "%q: want https or ssh", p.CloneProtocol)
	}
	return nil
}

// FieldError is an error about one field of the set.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Unwrap makes every FieldError match ErrInvalid.
func (e *FieldError) Unwrap() error { return ErrInvalid }

func invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}
