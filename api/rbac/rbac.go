package rbac

import (
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/casbin/casbin/v2"
	"github.com/casbin/casbin/v2/model"
	"github.com/casbin/casbin/v2/util"

	"github.com/windlass-cd/windlass/internal/appspec"
)

var (
	//go:embed model.conf
	modelText string
	//go:embed builtin-policy.csv
	builtinCSV string

	builtinRules = func() rules {
		r, _, err := parseCSV("builtin-policy.csv", builtinCSV, MatchGlob)
		if err != nil {
			panic(err)
		}
		return r
	}()

	// denyCheck selects the effect that is false when a deny rule matches.
	denyCheck = casbin.EnforceContext{RType: "r", PType: "p", EType: "e2", MType: "m"}
)

const (
	defaultScope     = "groups"
	msgEnforceFailed = "rbac enforce failed"
	msgUnenforced    = "rbac rule accepted but not enforced"
)

// Subject is who asks: a user or service account with its SSO groups, or
// the holder of a project role token (Name proj:<project>:<role>).
type Subject struct {
	Name   string
	Groups []string
}

// Config is the RBAC configuration, as in Argo CD's argocd-rbac-cm.
type Config struct {
	// PolicyCSV is policy.csv: p and g lines and # comments.
	PolicyCSV string
	// DefaultRole is policy.default, the role every authenticated subject
	// holds; empty for none.
	DefaultRole string
	// Scopes name the token claims whose values are the subject's groups;
	// default ["groups"].
	Scopes []string
	// MatchMode is policy.matchMode: MatchGlob (the default) or MatchRegex,
	// how the objects of policy.csv rules are matched. Resources and
	// actions are globs in both modes; built-in and project role rules
	// are always globs.
	MatchMode string
	// Logger reports the rules accepted but not enforced; default
	// slog.Default().
	Logger *slog.Logger
}

// Enforcer decides requests against the built-in policy, policy.csv and
// the project roles. It is safe for concurrent use.
type Enforcer struct {
	scopes []string
	mode   string
	log    *slog.Logger
	mu     sync.Mutex // serialises SetPolicy and SetProjects
	cur    atomic.Pointer[snapshot]
}

// snapshot is one immutable generation of the policy.
type snapshot struct {
	policy      rules // from policy.csv
	projects    rules // from the project roles
	defaultRole string
	casbin      *casbin.SyncedEnforcer
}

// New validates cfg and the projects' roles and returns an Enforcer.
func New(cfg Config, projects []appspec.Project) (*Enforcer, error) {
	scopes := cfg.Scopes
	if len(scopes) == 0 {
		scopes = []string{defaultScope}
	}
	if slices.Contains(scopes, "") {
		return nil, errors.New("rbac scopes: empty claim name")
	}
	mode := cfg.MatchMode
	switch mode {
	case "":
		mode = MatchGlob
	case MatchGlob, MatchRegex:
	default:
		return nil, fmt.Errorf("rbac policy.matchMode %q: want %s or %s", mode, MatchGlob, MatchRegex)
	}
	e := &Enforcer{scopes: slices.Clone(scopes), mode: mode, log: cfg.Logger}
	if e.log == nil {
		e.log = slog.Default()
	}
	policy, notes, err := parseCSV(policyCSVName, cfg.PolicyCSV, mode)
	if err != nil {
		return nil, err
	}
	proj, projNotes, err := parseProjects(projects)
	if err != nil {
		return nil, err
	}
	snap, err := newSnapshot(policy, proj, cfg.DefaultRole, mode)
	if err != nil {
		return nil, err
	}
	e.warn(append(notes, projNotes...))
	e.cur.Store(snap)
	return e, nil
}

// warn logs each rule accepted but not enforced.
func (e *Enforcer) warn(notes []unenforced) {
	for _, n := range notes {
		e.log.Warn(msgUnenforced, "source", n.source, "line", n.line, "rule", n.text,
			"resource", n.res, "action", n.act)
	}
}

// SetPolicy replaces policy.csv and policy.default. On error the current
// policy stays in force.
func (e *Enforcer) SetPolicy(csv, defaultRole string) error {
	policy, notes, err := parseCSV(policyCSVName, csv, e.mode)
	if err != nil {
		return err
	}
	err = e.swap(func(old *snapshot) (*snapshot, error) {
		return newSnapshot(policy, old.projects, defaultRole, e.mode)
	})
	if err == nil {
		e.warn(notes)
	}
	return err
}

// SetProjects replaces the project roles with those of projects. On error
// the current roles stay in force. It runs on every reload, so it does not
// log the rules it accepts without enforcing them; New does.
func (e *Enforcer) SetProjects(projects []appspec.Project) error {
	proj, _, err := parseProjects(projects)
	if err != nil {
		return err
	}
	return e.swap(func(old *snapshot) (*snapshot, error) {
		return newSnapshot(old.policy, proj, old.defaultRole, e.mode)
	})
}

func (e *Enforcer) swap(build func(old *snapshot) (*snapshot, error)) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	next, err := build(e.cur.Load())
	if err != nil {
		return err
	}
	e.cur.Store(next)
	return nil
}

// Enforce reports whether s may perform action on the object of resource:
// whether an allow rule reached from s.Name, one of s.Groups or the
// default role matches, and no deny rule reached from any of them does.
// A subject without a name (anonymous) is denied.
func (e *Enforcer) Enforce(s Subject, resource, action, object string) bool {
	if s.Name == "" {
		return false
	}
	snap := e.cur.Load()
	ids := make([]string, 0, len(s.Groups)+2)
	ids = append(ids, s.Name)
	for _, g := range s.Groups {
		if g != "" {
			ids = append(ids, g)
		}
	}
	if snap.defaultRole != "" {
		ids = append(ids, snap.defaultRole)
	}
	allowed := false
	for _, id := range ids {
		notDenied, err := snap.casbin.Enforce(denyCheck, id, resource, action, object)
		if err == nil && notDenied && !allowed {
			allowed, err = snap.casbin.Enforce(id, resource, action, object)
		}
		if err != nil {
			slog.Error(msgEnforceFailed, "subject", s.Name, "resource", resource, "action", action, "object", object, "err", err)
			return false
		}
		if !notDenied {
			return false
		}
	}
	return allowed
}

// Groups returns the groups in an authenticated token's claims: the
// values of the claims named by Config.Scopes, each a string or a list of
// strings, in order and without duplicates.
func (e *Enforcer) Groups(claims map[string]any) []string {
	var groups []string
	add := func(v any) {
		if g, ok := v.(string); ok && g != "" && !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	for _, scope := range e.scopes {
		switch v := claims[scope].(type) {
		case []string:
			for _, g := range v {
				add(g)
			}
		case []any:
			for _, g := range v {
				add(g)
			}
		default:
			add(v)
		}
	}
	return groups
}

// newSnapshot builds a casbin enforcer holding the built-in rules, then
// policy, whose objects mode matches, then proj.
func newSnapshot(policy, proj rules, defaultRole, mode string) (*snapshot, error) {
	defaultRole = strings.TrimSpace(defaultRole)
	all := concat(builtinRules, policy, proj)
	if defaultRole != "" && !all.defines(defaultRole) {
		return nil, fmt.Errorf("default role %q is not defined by any policy", defaultRole)
	}
	m, err := model.NewModelFromString(modelText)
	if err != nil {
		return nil, fmt.Errorf("load casbin model: %w", err)
	}
	ce, err := casbin.NewSyncedEnforcer(m)
	if err != nil {
		return nil, fmt.Errorf("create casbin enforcer: %w", err)
	}
	ce.AddFunction("rbacGlob", matchFunc(func(req, pattern string) bool { return glob(pattern, req) }))
	ce.AddFunction("rbacAction", matchFunc(matchAction))
	ce.AddFunction("rbacObject", matchObject)
	var ps [][]string
	ps = appendMode(ps, builtinRules.p, MatchGlob)
	ps = appendMode(ps, policy.p, mode)
	ps = appendMode(ps, proj.p, MatchGlob)
	if _, err := ce.AddPoliciesEx(ps); err != nil {
		return nil, fmt.Errorf("load policies: %w", err)
	}
	if _, err := ce.AddGroupingPoliciesEx(all.g); err != nil {
		return nil, fmt.Errorf("load role bindings: %w", err)
	}
	return &snapshot{policy: policy, projects: proj, defaultRole: defaultRole, casbin: ce}, nil
}

// appendMode appends the p rules to dst, each with the match mode of its
// object as a sixth field.
func appendMode(dst, p [][]string, mode string) [][]string {
	for _, r := range p {
		dst = append(dst, append(slices.Clone(r), mode))
	}
	return dst
}

// matchObject is the casbin matcher of objects: (request, pattern, mode).
// Regex patterns are checked when the policy is parsed, so Casbin's
// regexMatch never meets one that does not compile.
func matchObject(args ...any) (any, error) {
	if len(args) == 3 {
		if mode, ok := args[2].(string); ok && mode == MatchRegex {
			return util.RegexMatchFunc(args[0], args[1])
		}
		return matchFunc(func(req, pattern string) bool { return glob(pattern, req) })(args[:2]...)
	}
	return false, fmt.Errorf("rbac object matcher: want request, pattern and mode, got %v", args)
}

// matchFunc adapts match(request, pattern) to a casbin matcher function.
func matchFunc(match func(req, pattern string) bool) func(args ...any) (any, error) {
	return func(args ...any) (any, error) {
		if len(args) == 2 {
			req, ok1 := args[0].(string)
			pattern, ok2 := args[1].(string)
			if ok1 && ok2 {
				return match(req, pattern), nil
			}
		}
		return false, fmt.Errorf("rbac matcher: want two strings, got %v", args)
	}
}
