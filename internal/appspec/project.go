package appspec

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Project groups applications and restricts what they may do, as Argo CD's
// AppProject does: which repositories they render from, which clusters and
// namespaces they deploy to, which kinds of resources they may manage, and
// when they may sync.
type Project struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Labels and Annotations are kept from an Argo CD AppProject.
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// SourceRepos are globs of allowed repository URLs ("*" allows all);
	// one that starts with "!" denies what the rest matches.
	SourceRepos []string `json:"sourceRepos,omitempty"`
	// Destinations are the allowed server and namespace globs, which may
	// deny with "!" as SourceRepos do.
	Destinations []ProjectDestination `json:"destinations,omitempty"`
	// Cluster-scoped kinds are denied unless whitelisted (as in Argo CD);
	// namespaced kinds are allowed unless a whitelist exists and omits
	// them, or the blacklist names them.
	ClusterResourceWhitelist   []GroupKind  `json:"clusterResourceWhitelist,omitempty"`
	ClusterResourceBlacklist   []GroupKind  `json:"clusterResourceBlacklist,omitempty"`
	NamespaceResourceWhitelist []GroupKind  `json:"namespaceResourceWhitelist,omitempty"`
	NamespaceResourceBlacklist []GroupKind  `json:"namespaceResourceBlacklist,omitempty"`
	SyncWindows                []SyncWindow `json:"syncWindows,omitempty"`
	// Roles are the project's roles, named proj:<project>:<role> in RBAC.
	Roles []ProjectRole `json:"roles,omitempty"`
	// OrphanedResources, when set, makes the project's apps look for
	// objects in their namespaces that no app tracks (see orphaned.go).
	OrphanedResources *OrphanedResources `json:"orphanedResources,omitempty"`
	// DestinationServiceAccounts are the service accounts syncs
	// impersonate, by destination, when the installation turns sync
	// impersonation on (see impersonation.go).
	DestinationServiceAccounts []DestinationServiceAccount `json:"destinationServiceAccounts,omitempty"`
	// SourceNamespaces are globs of the Kubernetes namespaces Argo CD
	// Applications of the project may come from (see sourcens.go).
	SourceNamespaces []string `json:"sourceNamespaces,omitempty"`
	// SignatureKeys, when set, are the GPG keys (long key IDs, kept in
	// the GPG key store) one of which must have signed every Git commit
	// the project's apps render: Argo CD's signature verification.
	SignatureKeys []SignatureKey `json:"signatureKeys,omitempty"`
	// ForeignRepos are the repositories registered for other projects,
	// which this project's apps may not use. It is filled when the
	// project is read for a check, never stored.
	ForeignRepos []string `json:"foreignRepos,omitempty"`
}

// SignatureKey names a GPG key by its long key ID (16 hex digits).
type SignatureKey struct {
	KeyID string `json:"keyID"`
}

var keyIDPattern = regexp.MustCompile(`^[0-9A-Fa-f]{16}$`)

// SignatureKeyIDs are the project's signature key IDs in upper case; none
// means that commits need no signature.
func (p Project) SignatureKeyIDs() []string {
	if len(p.SignatureKeys) == 0 {
		return nil
	}
	out := make([]string, len(p.SignatureKeys))
	for i, k := range p.SignatureKeys {
		out[i] = strings.ToUpper(k.KeyID)
	}
	return out
}

// ProjectRole is a role scoped to one project, as in Argo CD's AppProject:
// its policies are Casbin lines in the Argo CD format whose subject is
// proj:<project>:<role> and whose objects lie inside the project, and the
// SSO groups listed are granted the role. API tokens can be minted for it.
type ProjectRole struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Policies    []string `json:"policies,omitempty"`
	Groups      []string `json:"groups,omitempty"`
}

// ProjectDestination is a cluster glob and a namespace glob. The cluster
// is matched by Server against the app's server URL and by Name against
// the name of a registered cluster the app names (destination.name);
// either matching is enough, and neither set matches every cluster.
type ProjectDestination struct {
	Server    string `json:"server,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// GroupKind names a kind; either part may be "*".
type GroupKind struct {
	Group string `json:"group"`
	Kind  string `json:"kind"`
}

// SyncWindow allows or denies syncs for Duration after each time Schedule
// (a five-field cron expression) fires, in TimeZone (default UTC). It
// applies to the apps, namespaces and clusters its globs match: to those
// any list matches, or with AndOperator to those every list that is set
// matches.
type SyncWindow struct {
	Kind         string   `json:"kind"`
	Schedule     string   `json:"schedule"`
	Duration     string   `json:"duration"`
	Applications []string `json:"applications,omitempty"`
	Namespaces   []string `json:"namespaces,omitempty"`
	Clusters     []string `json:"clusters,omitempty"`
	// ManualSync lets manual syncs through while the window denies.
	ManualSync bool   `json:"manualSync,omitempty"`
	TimeZone   string `json:"timeZone,omitempty"`
	// AndOperator makes the window match only what every set list of
	// Applications, Namespaces and Clusters matches.
	AndOperator bool `json:"andOperator,omitempty"`
	// Description is free text, a change ticket say; it is kept and shown.
	Description string `json:"description,omitempty"`
}

// Sync window kinds.
const (
	WindowAllow = "allow"
	WindowDeny  = "deny"
)

// DefaultProjectSpec is the built-in default project: everything allowed.
func DefaultProjectSpec() Project {
	return Project{
		Name:                     DefaultProject,
		Description:              "built-in default project",
		SourceRepos:              []string{"*"},
		Destinations:             []ProjectDestination{{Server: "*", Namespace: "*"}},
		ClusterResourceWhitelist: []GroupKind{{Group: "*", Kind: "*"}},
	}
}

// Validate checks the project's names, globs, schedules and durations.
func (p Project) Validate() error {
	if err := ValidateProjectName(p.Name); err != nil {
		return err
	}
	if err := validMetadata(p.Labels, p.Annotations); err != nil {
		return err
	}
	for i, w := range p.SyncWindows {
		if _, err := w.parse(); err != nil {
			return &FieldError{Field: fmt.Sprintf("syncWindows[%d]", i), Reason: err.Error()}
		}
	}
	for i, e := range p.DestinationServiceAccounts {
		if err := e.validate(fmt.Sprintf("destinationServiceAccounts[%d]", i)); err != nil {
			return err
		}
	}
	for i, k := range p.SignatureKeys {
		if !keyIDPattern.MatchString(k.KeyID) {
			return &FieldError{Field: fmt.Sprintf("signatureKeys[%d].keyID", i),
				Reason: fmt.Sprintf("%q is not a long GPG key ID (16 hex digits, as gpg --keyid-format long shows)", k.KeyID)}
		}
	}
	seen := map[string]bool{}
	for i, r := range p.Roles {
		field := fmt.Sprintf("roles[%d].name", i)
		if err := validName(field, r.Name, 63); err != nil {
			return err
		}
		if seen[r.Name] {
			return &FieldError{Field: field, Reason: "duplicate role " + r.Name}
		}
		seen[r.Name] = true
	}
	return nil
}

func glob(pattern, v string) bool {
	if pattern == "*" {
		return true
	}
	ok, err := path.Match(pattern, v)
	return err == nil && ok
}

func anyGlob(patterns []string, v string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return glob(p, v) })
}

// A pattern in SourceRepos or Destinations that starts with "!" is a deny,
// as in Argo CD: it matches what the rest of it does not, and a value the
// rest does match is denied whatever else the project allows.

// matchOrDeny reports whether pattern matches v, and whether it is a deny
// that v falls under.
func matchOrDeny(pattern string, v ...string) (match, denied bool) {
	inner, deny := strings.CutPrefix(pattern, "!")
	hit := slices.ContainsFunc(v, func(v string) bool { return glob(inner, v) })
	if deny {
		return !hit, hit
	}
	return hit, false
}

// PermitsSource reports whether the project allows repoURL: a pattern
// allows it, and no deny pattern covers it.
func (p Project) PermitsSource(repoURL string) bool {
	allowed := false
	for _, pattern := range p.SourceRepos {
		match, denied := matchOrDeny(pattern, repoURL, strings.TrimSuffix(repoURL, ".git"))
		if denied {
			return false
		}
		allowed = allowed || match
	}
	return allowed
}

// foreign reports whether repoURL, trimmed of a trailing slash and
// ".git", is one of ForeignRepos.
func (p Project) foreign(repoURL string) bool {
	u := strings.TrimSuffix(strings.TrimSuffix(repoURL, "/"), ".git")
	return slices.Contains(p.ForeignRepos, u)
}

// PermitsDestination reports whether the project allows the destination:
// an entry allows its server and namespace, and no entry's deny pattern
// covers either of them.
func (p Project) PermitsDestination(d Destination) bool {
	allowed := false
	for _, pd := range p.Destinations {
		server, serverDenied := pd.matchCluster(d)
		ns, nsDenied := matchOrDeny(orStar(pd.Namespace), d.Namespace)
		if serverDenied || nsDenied {
			return false
		}
		allowed = allowed || (server && ns)
	}
	return allowed
}

// matchCluster matches d's cluster by server URL or by name.
func (pd ProjectDestination) matchCluster(d Destination) (match, denied bool) {
	if pd.Name == "" {
		return matchOrDeny(orStar(pd.Server), d.Server)
	}
	match, denied = matchOrDeny(pd.Name, d.Name)
	if pd.Server != "" {
		sm, sd := matchOrDeny(pd.Server, d.Server)
		match, denied = match || sm, denied || sd
	}
	return match, denied
}

func orStar(v string) string {
	if v == "" {
		return "*"
	}
	return v
}

func matchGK(list []GroupKind, group, kind string) bool {
	return slices.ContainsFunc(list, func(gk GroupKind) bool { return glob(gk.Group, group) && glob(gk.Kind, kind) })
}

// PermitsResource reports whether the project allows a kind.
func (p Project) PermitsResource(group, kind string, namespaced bool) bool {
	if !namespaced {
		return matchGK(p.ClusterResourceWhitelist, group, kind) && !matchGK(p.ClusterResourceBlacklist, group, kind)
	}
	if len(p.NamespaceResourceWhitelist) > 0 && !matchGK(p.NamespaceResourceWhitelist, group, kind) {
		return false
	}
	return !matchGK(p.NamespaceResourceBlacklist, group, kind)
}

// CheckApp reports why the project does not allow app's sources and
// destination, or nil.
func (p Project) CheckApp(app Application) error {
	for _, s := range app.AllSources() {
		if !p.PermitsSource(s.RepoURL) {
			return &FieldError{Field: "source.repoURL", Reason: fmt.Sprintf("repository %s is not permitted in project %s", s.RepoURL, p.Name)}
		}
		if p.foreign(s.RepoURL) {
			return &FieldError{Field: "source.repoURL", Reason: fmt.Sprintf("repository %s is registered for another project than %s", s.RepoURL, p.Name)}
		}
	}
	if err := p.checkSourceNamespace(app); err != nil {
		return err
	}
	if !p.PermitsDestination(app.Destination) {
		return &FieldError{Field: "destination", Reason: fmt.Sprintf("destination %s namespace %q is not permitted in project %s",
			destLabel(app.Destination), app.Destination.Namespace, p.Name)}
	}
	return nil
}

// WindowDecision is the verdict of the sync windows at a moment.
type WindowDecision struct {
	Allowed bool   `json:"allowed"`
	Reason  string `json:"reason,omitempty"`
	// NextChange is when a window next opens or closes (zero: never), so
	// that a denied automated sync knows when to look again.
	NextChange time.Time `json:"nextChange,omitzero"`
}

type parsedWindow struct {
	SyncWindow
	sched cron.Schedule
	dur   time.Duration
	loc   *time.Location
}

var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

func (w SyncWindow) parse() (parsedWindow, error) {
	if w.Kind != WindowAllow && w.Kind != WindowDeny {
		return parsedWindow{}, fmt.Errorf("kind must be %q or %q", WindowAllow, WindowDeny)
	}
	sched, err := cronParser.Parse(w.Schedule)
	if err != nil {
		return parsedWindow{}, fmt.Errorf("schedule %q: %w", w.Schedule, err)
	}
	dur, err := ParseDuration(w.Duration)
	if err != nil || dur <= 0 {
		return parsedWindow{}, fmt.Errorf("duration %q must be a positive duration such as 1h", w.Duration)
	}
	loc := time.UTC
	if w.TimeZone != "" {
		if loc, err = time.LoadLocation(w.TimeZone); err != nil {
			return parsedWindow{}, fmt.Errorf("time zone %q: %w", w.TimeZone, err)
		}
	}
	return parsedWindow{SyncWindow: w, sched: sched, dur: dur, loc: loc}, nil
}

func (w parsedWindow) matches(app, namespace, server string) bool {
	set, some, all := 0, false, true
	for _, l := range [...]struct {
		globs []string
		v     string
	}{{w.Applications, app}, {w.Namespaces, namespace}, {w.Clusters, server}} {
		if len(l.globs) == 0 {
			continue
		}
		set++
		if anyGlob(l.globs, l.v) {
			some = true
		} else {
			all = false
		}
	}
	if w.AndOperator {
		return set > 0 && all
	}
	return some
}

// active reports whether the window is open at now, and when it next
// opens or closes.
func (w parsedWindow) active(now time.Time) (bool, time.Time) {
	local := now.In(w.loc)
	var last time.Time
	for t := w.sched.Next(local.Add(-w.dur - time.Minute)); !t.After(local); t = w.sched.Next(t) {
		last = t
	}
	if !last.IsZero() && local.Before(last.Add(w.dur)) {
		return true, last.Add(w.dur)
	}
	return false, w.sched.Next(local)
}

// SyncAllowed applies the project's sync windows to a sync of app at now,
// as Argo CD does: a matching active deny window denies; when matching
// allow windows exist, one of them must be active. ManualSync on a denying
// window lets manual syncs through.
func (p Project) SyncAllowed(now time.Time, app, namespace, server string, manual bool) (WindowDecision, error) {
	var (
		allows, denies       []parsedWindow
		activeAllow          bool
		manualOK             = true
		next                 time.Time
		deniedBy, closedAllw string
	)
	for _, sw := range p.SyncWindows {
		w, err := sw.parse()
		if err != nil {
			return WindowDecision{}, err
		}
		if !w.matches(app, namespace, server) {
			continue
		}
		on, change := w.active(now)
		if next.IsZero() || change.Before(next) {
			next = change
		}
		switch {
		case w.Kind == WindowAllow:
			allows = append(allows, w)
			if on {
				activeAllow = true
			} else if closedAllw == "" {
				closedAllw = w.Schedule
			}
		case on:
			denies = append(denies, w)
			if deniedBy == "" {
				deniedBy = w.Schedule
			}
			manualOK = manualOK && w.ManualSync
		}
	}
	d := WindowDecision{Allowed: true, NextChange: next}
	switch {
	case len(denies) > 0:
		d.Allowed, d.Reason = false, fmt.Sprintf("sync denied by the deny window %q (%s)", deniedBy, denies[0].Duration)
	case len(allows) > 0 && !activeAllow:
		d.Allowed, d.Reason = false, fmt.Sprintf("no allow window is open (next: %q)", closedAllw)
		manualOK = slices.ContainsFunc(allows, func(w parsedWindow) bool { return w.ManualSync })
	}
	if !d.Allowed && manual && manualOK {
		d.Allowed, d.Reason = true, ""
	}
	return d, nil
}
