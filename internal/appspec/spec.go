package appspec

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
)

// DefaultProject is the project every installation has.
const DefaultProject = "default"

// InClusterServer is the destination server that names the cluster Windlass
// itself is configured for, as in Argo CD.
const InClusterServer = "https://kubernetes.default.svc"

// Application is the desired state of one application.
type Application struct {
	Name    string `json:"name"`
	Project string `json:"project"`
	Source  Source `json:"source"`
	// Sources replaces Source for a multi-source application. A source
	// with a Ref only lends its files to the others ($ref/path in Helm
	// valueFiles) unless it also has a Path or Chart.
	Sources     []Source    `json:"sources,omitempty"`
	Destination Destination `json:"destination"`
	SyncPolicy  *SyncPolicy `json:"syncPolicy,omitempty"`
	// RefreshSeconds overrides the global refresh interval for this app.
	RefreshSeconds int `json:"refreshSeconds,omitempty"`
}

// Source says where the manifests come from.
type Source struct {
	RepoURL        string `json:"repoURL"`
	Path           string `json:"path,omitempty"`
	TargetRevision string `json:"targetRevision,omitempty"`
	// Chart names a chart in the Helm repository RepoURL (HTTP or oci://);
	// TargetRevision is then its version or a semver range.
	Chart     string     `json:"chart,omitempty"`
	Ref       string     `json:"ref,omitempty"`
	Directory *Directory `json:"directory,omitempty"`
	Helm      *Helm      `json:"helm,omitempty"`
	Kustomize *Kustomize `json:"kustomize,omitempty"`
	Plugin    *Plugin    `json:"plugin,omitempty"`
}

// Directory holds the options of the plain-manifest tool.
type Directory struct {
	Recurse bool     `json:"recurse,omitempty"`
	Include string   `json:"include,omitempty"`
	Exclude string   `json:"exclude,omitempty"`
	Jsonnet *Jsonnet `json:"jsonnet,omitempty"`
}

// Destination is the cluster and default namespace the manifests go to.
type Destination struct {
	Server    string `json:"server,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// SyncPolicy controls automated sync.
type SyncPolicy struct {
	Automated   *Automated `json:"automated,omitempty"`
	SyncOptions []string   `json:"syncOptions,omitempty"`
}

// Automated turns on automated sync.
type Automated struct {
	Prune      bool `json:"prune,omitempty"`
	SelfHeal   bool `json:"selfHeal,omitempty"`
	AllowEmpty bool `json:"allowEmpty,omitempty"`
}

// IsAutomated reports whether automated sync is on.
func (a Application) IsAutomated() bool {
	return a.SyncPolicy != nil && a.SyncPolicy.Automated != nil
}

// Revision is the target revision with the default applied.
func (s Source) Revision() string {
	if s.TargetRevision == "" {
		return "HEAD"
	}
	return s.TargetRevision
}

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid application")

// FieldError names the field that failed validation.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Reason) }

// Unwrap makes every FieldError match ErrInvalid.
func (e *FieldError) Unwrap() error { return ErrInvalid }

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Defaulted returns a copy with defaults filled in.
func (a Application) Defaulted() Application {
	if a.Project == "" {
		a.Project = DefaultProject
	}
	if a.Destination.Server == "" {
		a.Destination.Server = InClusterServer
	}
	if a.Source.Path == "" {
		a.Source.Path = "."
	}
	return a
}

// Validate checks that the spec is well formed. It does not check project
// permissions. The returned error is a *FieldError.
func (a Application) Validate() error {
	if err := ValidateAppName(a.Name); err != nil {
		return err
	}
	if err := ValidateProjectName(a.Project); err != nil {
		return err
	}
	if strings.TrimSpace(a.Source.RepoURL) == "" {
		return &FieldError{Field: "source.repoURL", Reason: "is required"}
	}
	if err := ValidRepoPath(a.Source.Path); err != nil {
		return &FieldError{Field: "source.path", Reason: err.Error()}
	}
	if strings.ContainsAny(a.Source.TargetRevision, " \t\n~^:?*[\\") {
		return &FieldError{Field: "source.targetRevision", Reason: "is not a valid Git revision"}
	}
	if a.Destination.Namespace != "" {
		if err := validName("destination.namespace", a.Destination.Namespace, 63); err != nil {
			return err
		}
	}
	if a.RefreshSeconds < 0 {
		return &FieldError{Field: "refreshSeconds", Reason: "must not be negative"}
	}
	return nil
}

// ValidateAppName checks an application name (a DNS label of at most 53
// characters, as in Argo CD); the error names the field "name".
func ValidateAppName(v string) error { return validName("name", v, 53) }

// ValidateProjectName checks a project name; the error names "project".
func ValidateProjectName(v string) error { return validName("project", v, 63) }

func validName(field, v string, max int) error {
	switch {
	case v == "":
		return &FieldError{Field: field, Reason: "is required"}
	case len(v) > max:
		return &FieldError{Field: field, Reason: fmt.Sprintf("must be at most %d characters", max)}
	case !dnsLabel.MatchString(v):
		return &FieldError{Field: field, Reason: "must be a DNS label: lower-case letters, digits and '-'"}
	}
	return nil
}

// ValidRepoPath rejects a repository path that is absolute or leaves the
// repository root.
func ValidRepoPath(p string) error {
	if p == "" {
		return nil
	}
	if strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.ContainsRune(p, 0) {
		return errors.New("must be a relative path inside the repository")
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return errors.New("must not leave the repository (path traversal)")
	}
	return nil
}
