package appspec

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"k8s.io/apimachinery/pkg/util/validation"
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
	// IgnoreDifferences are fields the diff ignores (see diff.go).
	IgnoreDifferences []ResourceIgnoreDifferences `json:"ignoreDifferences,omitempty"`
	// Info is free-form information about the app, shown to its users.
	Info []InfoItem `json:"info,omitempty"`
	// Labels and Annotations are the app's metadata, as on Argo CD's
	// Application: label selectors filter on labels, and some annotations
	// change what Windlass does (see docs/migrating-from-argocd.md).
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// RevisionHistoryLimit is how many sync summaries the app keeps in
	// its state (nil: 20; at least the last one is kept, which the status
	// shows). Older syncs stay listed as closed sync workflows.
	RevisionHistoryLimit *int `json:"revisionHistoryLimit,omitempty"`
	// SourceNamespace is the Kubernetes namespace an Argo CD Application
	// came from (its metadata.namespace), which the project's
	// sourceNamespaces may restrict.
	SourceNamespace string `json:"sourceNamespace,omitempty"`
	// ManagedBy is set when another app's manifests declare this one (app
	// of apps); only that app's sync sets it, the API refuses it.
	ManagedBy *ManagedBy `json:"managedBy,omitempty"`
	// DependsOn names the apps this one waits for before each sync:
	// "<name>" in the app's own project, or "<project>/<name>".
	DependsOn []string `json:"dependsOn,omitempty"`
}

// ManagedBy records the parent app of an app declared in Git.
type ManagedBy struct {
	// App is the parent, "<project>/<name>".
	App string `json:"app"`
	// Cascade is how the child is deleted when it leaves the parent's
	// manifests: "foreground" or "background" (Argo CD's
	// resources-finalizer) delete its resources, "" leaves them.
	Cascade string `json:"cascade,omitempty"`
}

// MaxRevisionHistoryLimit bounds RevisionHistoryLimit: the summaries
// travel in the app workflow's state.
const MaxRevisionHistoryLimit = 100

// InfoItem is one name and value of an application's Info.
type InfoItem struct {
	Name  string `json:"name"`
	Value string `json:"value"`
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
	// Name labels one of several sources (Argo CD's source name); unique
	// within the app, it is kept and shown.
	Name string `json:"name,omitempty"`
}

// Directory holds the options of the plain-manifest tool.
type Directory struct {
	Recurse bool     `json:"recurse,omitempty"`
	Include string   `json:"include,omitempty"`
	Exclude string   `json:"exclude,omitempty"`
	Jsonnet *Jsonnet `json:"jsonnet,omitempty"`
}

// Destination is the cluster and default namespace the manifests go to.
// The cluster is named by its server URL or, as in Argo CD, by the name of
// a registered cluster (Name), which is resolved to its server each time
// the app reaches the cluster, so a cluster re-pointed is followed.
type Destination struct {
	Server    string `json:"server,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// InClusterName is the built-in name of the cluster InClusterServer.
const InClusterName = "in-cluster"

// SyncPolicy controls automated sync.
type SyncPolicy struct {
	Automated   *Automated `json:"automated,omitempty"`
	SyncOptions []string   `json:"syncOptions,omitempty"`
	// Retry retries a failed sync (Argo CD's syncPolicy.retry).
	Retry *RetryStrategy `json:"retry,omitempty"`
	// SyncTimeoutSeconds bounds a whole sync; 0 means no limit. On timeout
	// the sync is terminated and its hooks cleaned up.
	SyncTimeoutSeconds int `json:"syncTimeoutSeconds,omitempty"`
	// ManagedNamespaceMetadata labels and annotates the namespace that
	// CreateNamespace=true creates.
	ManagedNamespaceMetadata *ManagedNamespaceMetadata `json:"managedNamespaceMetadata,omitempty"`
}

// RetryStrategy says how often and how fast a failed sync is retried.
type RetryStrategy struct {
	// Limit is the number of retries; 0 means none, a negative value
	// means no limit.
	Limit   int      `json:"limit,omitempty"`
	Backoff *Backoff `json:"backoff,omitempty"`
	// Refresh makes a retry sync the target revision's latest commit
	// rather than the one the sync started with (a rollback, or a sync
	// of an explicit revision, stays on its commit).
	Refresh bool `json:"refresh,omitempty"`
}

// Backoff is the delay between retries: Duration, multiplied by Factor
// after each retry, capped at MaxDuration. Durations use Go syntax ("5s",
// "3m"); a bare number means seconds, as in Argo CD.
type Backoff struct {
	Duration    string `json:"duration,omitempty"`
	Factor      int64  `json:"factor,omitempty"`
	MaxDuration string `json:"maxDuration,omitempty"`
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

var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// MaxAppName is the longest application name: a DNS subdomain, as
// Kubernetes (and so Argo CD) allows for an Application's name.
const MaxAppName = 253

// Defaulted returns a copy with defaults filled in.
func (a Application) Defaulted() Application {
	if a.Project == "" {
		a.Project = DefaultProject
	}
	switch d := a.Destination; {
	case d.Name == InClusterName && (d.Server == "" || d.Server == InClusterServer):
		a.Destination.Server, a.Destination.Name = InClusterServer, ""
	case d.Server == "" && d.Name == "":
		a.Destination.Server = InClusterServer
	}
	if a.Source.Path == "" && a.Source.Chart == "" {
		a.Source.Path = "."
	}
	return a
}

// AllSources returns Sources, or Source when the app has a single one.
func (a Application) AllSources() []Source {
	if len(a.Sources) > 0 {
		return a.Sources
	}
	return []Source{a.Source}
}

func (s Source) validate(field string) error {
	if strings.TrimSpace(s.RepoURL) == "" {
		return &FieldError{Field: field + ".repoURL", Reason: "is required"}
	}
	if RepoURLHasPassword(s.RepoURL) {
		// The spec goes into workflow inputs and history: never echo the URL.
		return &FieldError{Field: field + ".repoURL", Reason: "holds a password: register the repository's credentials " +
			"(windlass repo add, or POST /api/v1/repositories) and use the URL without them"}
	}
	if err := ValidRepoPath(s.Path); err != nil {
		return &FieldError{Field: field + ".path", Reason: err.Error()}
	}
	if s.Chart == "" && !ociDigest(s) && strings.ContainsAny(s.TargetRevision, " \t\n~^:?*[\\") {
		// Not a Git reference; a semver range over tags is still fine.
		if _, err := semver.NewConstraint(s.TargetRevision); err != nil || strings.ContainsAny(s.TargetRevision, "\n\t:?[\\") {
			return &FieldError{Field: field + ".targetRevision", Reason: "is neither a Git revision nor a semver range"}
		}
	}
	if s.Ref != "" && !dnsLabel.MatchString(s.Ref) {
		return &FieldError{Field: field + ".ref", Reason: "must be a DNS label"}
	}
	return nil
}

// ociDigest reports an OCI source pinned to a digest (sha256:<hex>).
func ociDigest(s Source) bool {
	alg, hex, ok := strings.Cut(s.TargetRevision, ":")
	return ok && IsOCIRepoURL(s.RepoURL) && alg != "" && hex != "" &&
		!strings.ContainsAny(alg, " \t\n/") && !strings.ContainsAny(hex, " \t\n:/")
}

// MaxSpecBytes bounds an application's spec as JSON: the spec travels in
// the app workflow's state and in every sync's input and summary, which
// Temporal bounds, so large values belong in the repository.
const MaxSpecBytes = 128 << 10

// checkSize refuses a spec larger than MaxSpecBytes. ParseApplication
// runs it when a spec is saved; Validate does not, because workflows call
// it and encoding/json is not for workflow code.
func (a Application) checkSize() error {
	if b, err := json.Marshal(a); err == nil && len(b) > MaxSpecBytes {
		return &FieldError{Field: "spec", Reason: fmt.Sprintf("is %d KiB as JSON, more than the %d KiB an application may hold: "+
			"move large values (Helm values, Jsonnet arguments, parameters) into files in the repository", len(b)>>10, MaxSpecBytes>>10)}
	}
	return nil
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
	srcs := a.AllSources()
	for i, src := range srcs {
		field := "source"
		if len(a.Sources) > 0 {
			field = fmt.Sprintf("sources[%d]", i)
		}
		if err := src.validate(field); err != nil {
			return err
		}
		if src.Name != "" && slices.ContainsFunc(srcs[:i], func(o Source) bool { return o.Name == src.Name }) {
			return &FieldError{Field: field + ".name", Reason: fmt.Sprintf("%q names another source too", src.Name)}
		}
	}
	if err := a.Destination.validate(); err != nil {
		return err
	}
	if a.SourceNamespace != "" {
		if err := validName("sourceNamespace", a.SourceNamespace, 63); err != nil {
			return err
		}
	}
	if a.Destination.Namespace != "" {
		if err := validName("destination.namespace", a.Destination.Namespace, 63); err != nil {
			return err
		}
	}
	if err := a.SyncPolicy.validate(); err != nil {
		return err
	}
	if a.RefreshSeconds < 0 {
		return &FieldError{Field: "refreshSeconds", Reason: "must not be negative"}
	}
	if l := a.RevisionHistoryLimit; l != nil && (*l < 0 || *l > MaxRevisionHistoryLimit) {
		return &FieldError{Field: "revisionHistoryLimit", Reason: fmt.Sprintf("must be between 0 and %d", MaxRevisionHistoryLimit)}
	}
	for i, in := range a.Info {
		if in.Name == "" {
			return &FieldError{Field: fmt.Sprintf("info[%d].name", i), Reason: "is required"}
		}
	}
	if err := validMetadata(a.Labels, a.Annotations); err != nil {
		return err
	}
	if err := validAnnotations(a.Annotations); err != nil {
		return err
	}
	if err := a.validDependsOn(); err != nil {
		return err
	}
	return validArgoTracking(a)
}

// validMetadata checks label and annotation keys, and label values, as
// Kubernetes does.
func validMetadata(labels, annotations map[string]string) error {
	//workflowcheck:ignore (the keys are sorted)
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return &FieldError{Field: "labels", Reason: fmt.Sprintf("key %q: %s", k, errs[0])}
		}
		if errs := validation.IsValidLabelValue(labels[k]); len(errs) > 0 {
			return &FieldError{Field: "labels." + k, Reason: errs[0]}
		}
	}
	//workflowcheck:ignore (the keys are sorted)
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		if errs := validation.IsQualifiedName(strings.ToLower(k)); len(errs) > 0 {
			return &FieldError{Field: "annotations", Reason: fmt.Sprintf("key %q: %s", k, errs[0])}
		}
	}
	return nil
}

// ValidateAppName checks an application name: a DNS subdomain (dots
// allowed, as in Argo CD's app-of-apps charts); the error names "name".
func ValidateAppName(v string) error {
	switch {
	case v == "":
		return &FieldError{Field: "name", Reason: "is required"}
	case len(v) > MaxAppName:
		return &FieldError{Field: "name", Reason: fmt.Sprintf("must be at most %d characters", MaxAppName)}
	case !dnsSubdomain.MatchString(v):
		return &FieldError{Field: "name", Reason: "must be a DNS subdomain: lower-case letters, digits, '-' and '.', " +
			"each dot-separated part starting and ending with a letter or digit"}
	}
	return nil
}

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

func (p *SyncPolicy) validate() error {
	if p == nil {
		return nil
	}
	if p.SyncTimeoutSeconds < 0 {
		return &FieldError{Field: "syncPolicy.syncTimeoutSeconds", Reason: "must not be negative"}
	}
	if p.Retry == nil || p.Retry.Backoff == nil {
		return nil
	}
	b := p.Retry.Backoff
	for _, d := range []struct{ field, v string }{{"duration", b.Duration}, {"maxDuration", b.MaxDuration}} {
		if d.v == "" {
			continue
		}
		if _, err := ParseDuration(d.v); err != nil {
			return &FieldError{Field: "syncPolicy.retry.backoff." + d.field, Reason: err.Error()}
		}
	}
	if b.Factor < 0 {
		return &FieldError{Field: "syncPolicy.retry.backoff.factor", Reason: "must not be negative"}
	}
	return nil
}

// ParseDuration parses a Go duration, or a bare number of seconds as Argo
// CD accepts.
func ParseDuration(v string) (time.Duration, error) {
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 {
			return 0, errors.New("must not be negative")
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 5s or 3m", v)
	}
	if d < 0 {
		return 0, errors.New("must not be negative")
	}
	return d, nil
}
