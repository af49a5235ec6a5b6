package rbac

import (
	"encoding/csv"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// Resources named in policies.
const (
	ResourceApplications = "applications"
	ResourceProjects     = "projects"
	ResourceRepositories = "repositories"
	ResourceClusters     = "clusters"
	ResourceAccounts     = "accounts"
	ResourceLogs         = "logs"
	// ResourceApplicationSets objects are <project>/<set>.
	ResourceApplicationSets = "applicationsets"
	// ResourceGPGKeys objects are key IDs.
	ResourceGPGKeys = "gpgkeys"
)

// Resources of Argo CD's vocabulary that policies may name but that no
// Windlass endpoint asks for yet: their rules are accepted, never matched.
const (
	resCertificates = "certificates"
	resExec         = "exec"
	resExtensions   = "extensions"
)

// Actions named in policies. A resource action is requested as
// "action/<group>/<kind>/<name>"; the policy action "action" grants all of
// them, as "action/*" does.
const (
	ActionGet      = "get"
	ActionCreate   = "create"
	ActionUpdate   = "update"
	ActionDelete   = "delete"
	ActionSync     = "sync"
	ActionRollback = "rollback"
	ActionOverride = "override"
	ActionAction   = "action"
	// actInvoke is Argo CD's action on extensions; Windlass has none yet.
	actInvoke = "invoke"
)

// Match modes of policy.matchMode: how the object of a policy.csv rule is
// matched.
const (
	MatchGlob  = "glob"
	MatchRegex = "regex"
)

// Built-in roles, defined by builtin-policy.csv.
const (
	RoleReadonly = "role:readonly"
	RoleAdmin    = "role:admin"
)

const (
	effectAllow   = "allow"
	effectDeny    = "deny"
	actionPrefix  = ActionAction + "/"
	policyCSVName = "policy.csv"
)

var (
	// servedResources are the resources Windlass enforces.
	servedResources = []string{ResourceApplications, ResourceProjects, ResourceRepositories,
		ResourceClusters, ResourceAccounts, ResourceLogs, ResourceApplicationSets, ResourceGPGKeys}
	resources = append(slices.Clone(servedResources),
		resCertificates, resExec, resExtensions)
	// servedActions are the actions Windlass enforces, with
	// action/<group>/<kind>/<name>.
	servedActions = []string{ActionGet, ActionCreate, ActionUpdate, ActionDelete,
		ActionSync, ActionRollback, ActionOverride, ActionAction}
	actions = append(slices.Clone(servedActions), actInvoke)
	// subresourcePrefixes start Argo CD's fine-grained actions on an
	// application's resources, update/<group>/<kind>/<namespace>/<name> and
	// delete/..., asked for by PATCH and DELETE .../resource.
	subresourcePrefixes = []string{ActionUpdate + "/", ActionDelete + "/"}
	// appScoped are the resources whose objects are <project>/<name>.
	appScoped = []string{ResourceApplications, ResourceLogs, ResourceApplicationSets, resExec}
	// pFields names the fields of a p line after the "p".
	pFields = []string{"subject", "resource", "action", "object", "effect"}
)

// PolicyError reports an invalid policy line.
type PolicyError struct {
	// Source is where the line comes from: "policy.csv", or
	// "project <project> role <role>" for a project role's policies.
	Source string
	// Line is the 1-based line of a CSV, or the 1-based index of the
	// policy in a project role's policies.
	Line int
	// Text is the offending line.
	Text string
	// Err says why the line is rejected.
	Err error
}

func (e *PolicyError) Error() string {
	return fmt.Sprintf("%s line %d %q: %v", e.Source, e.Line, e.Text, e.Err)
}

func (e *PolicyError) Unwrap() error { return e.Err }

// ValidatePolicy checks policy CSV text (p and g lines, # comments) as New
// and SetPolicy do, and returns a *PolicyError naming the first bad line.
func ValidatePolicy(csv string) error {
	_, _, err := parseCSV(policyCSVName, csv, MatchGlob)
	return err
}

// unenforced is a rule that is accepted but can match no request Windlass
// serves: its resource or its action is one Windlass does not have yet.
type unenforced struct {
	source string
	line   int
	text   string
	res    string
	act    string
}

// ProjectRoleSubject is the subject of a project role, proj:<project>:<role>:
// the Name of a Subject holding a token of that role.
func ProjectRoleSubject(project, role string) string {
	return "proj:" + project + ":" + role
}

// AppObject is the object of an application or its logs: <project>/<app>.
func AppObject(project, app string) string {
	return project + "/" + app
}

// rules are validated policy lines without their "p" or "g".
type rules struct {
	p [][]string // subject, resource, action, object, effect
	g [][]string // user or group, role
}

func (r *rules) addLine(fields []string) {
	switch {
	case fields == nil:
	case fields[0] == "p":
		r.p = append(r.p, fields[1:])
	default:
		r.g = append(r.g, fields[1:])
	}
}

// concat returns the rules of all sets, sharing no slice with them.
func concat(sets ...rules) rules {
	var out rules
	for _, s := range sets {
		out.p = append(out.p, s.p...)
		out.g = append(out.g, s.g...)
	}
	return out
}

// defines reports whether some rule grants role permissions or binds to it.
func (r rules) defines(role string) bool {
	return slices.ContainsFunc(r.p, func(p []string) bool { return p[0] == role }) ||
		slices.ContainsFunc(r.g, func(g []string) bool { return g[1] == role })
}

// parseCSV parses policy CSV text whose objects are matched by mode, and
// lists the rules it accepts without enforcing them.
func parseCSV(source, text, mode string) (rules, []unenforced, error) {
	var (
		rs    rules
		notes []unenforced
	)
	for i, line := range strings.Split(text, "\n") {
		fields, err := parseLine(line, mode)
		if err != nil {
			return rules{}, nil, &PolicyError{Source: source, Line: i + 1, Text: strings.TrimSpace(line), Err: err}
		}
		if n, ok := unenforcedRule(fields); ok {
			n.source, n.line, n.text = source, i+1, strings.TrimSpace(line)
			notes = append(notes, n)
		}
		rs.addLine(fields)
	}
	return rs, notes, nil
}

// unenforcedRule reports whether fields is a p line that can match no
// request Windlass serves, and names its resource and action.
func unenforcedRule(fields []string) (unenforced, bool) {
	if len(fields) == 0 || fields[0] != "p" {
		return unenforced{}, false
	}
	res, act := fields[2], fields[3]
	served := slices.ContainsFunc(servedResources, func(r string) bool { return glob(res, r) }) &&
		(slices.ContainsFunc(append([]string{actionPrefix}, subresourcePrefixes...), func(p string) bool { return strings.HasPrefix(act, p) }) ||
			slices.ContainsFunc(servedActions, func(a string) bool { return glob(act, a) }))
	return unenforced{res: res, act: act}, !served
}

// parseLine parses and checks one line, whose object is matched by mode;
// blank and comment lines give nil.
func parseLine(line, mode string) ([]string, error) {
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return nil, nil
	}
	r := csv.NewReader(strings.NewReader(line))
	r.TrimLeadingSpace = true
	fields, err := r.Read()
	var perr *csv.ParseError
	switch {
	case errors.As(err, &perr):
		return nil, fmt.Errorf("csv column %d: %w", perr.Column, perr.Err)
	case err != nil:
		return nil, fmt.Errorf("parse csv: %w", err)
	}
	for i := range fields {
		fields[i] = strings.TrimSpace(fields[i])
	}
	switch fields[0] {
	case "p":
		err = checkP(fields[1:], mode)
	case "g":
		err = checkG(fields[1:])
	default:
		err = fmt.Errorf("unknown policy type %q: want p or g", fields[0])
	}
	if err != nil {
		return nil, err
	}
	return fields, nil
}

func checkP(f []string, mode string) error {
	if len(f) != len(pFields) {
		return fmt.Errorf("p lines have 6 fields (p, subject, resource, action, object, effect), got %d", len(f)+1)
	}
	for i, v := range f {
		if v == "" {
			return fmt.Errorf("empty %s", pFields[i])
		}
	}
	res, act, obj, eft := f[1], f[2], f[3], f[4]
	if !validResource(res) {
		return fmt.Errorf("unknown resource %q: want one of %s", res, strings.Join(resources, ", "))
	}
	if !validAction(act) {
		return fmt.Errorf("unknown action %q: want one of %s, action/<group>/<kind>/<name>, "+
			"or update/ or delete/<group>/<kind>/<namespace>/<name>", act, strings.Join(actions, ", "))
	}
	if slices.Contains(appScoped, res) && !strings.ContainsAny(obj, "/*") {
		return fmt.Errorf("object %q of %s must be <project>/<name>", obj, res)
	}
	if mode == MatchRegex {
		if _, err := regexp.Compile(obj); err != nil {
			return fmt.Errorf("object %q is not a regular expression: %w", obj, err)
		}
	}
	if eft != effectAllow && eft != effectDeny {
		return fmt.Errorf("unknown effect %q: want allow or deny", eft)
	}
	return nil
}

func checkG(f []string) error {
	if len(f) != 2 {
		return fmt.Errorf("g lines have 3 fields (g, user or group, role), got %d", len(f)+1)
	}
	if f[0] == "" || f[1] == "" {
		return errors.New("empty user, group or role")
	}
	return nil
}

// validResource accepts a known resource, or a glob matching one.
func validResource(res string) bool {
	return slices.ContainsFunc(resources, func(r string) bool { return glob(res, r) })
}

// validAction accepts a known action, a glob matching one, or a resource
// action or sub-resource path (which may itself be a glob, such as
// action/* or update/*/Pod/*).
func validAction(act string) bool {
	for _, prefix := range append([]string{actionPrefix}, subresourcePrefixes...) {
		if rest, ok := strings.CutPrefix(act, prefix); ok {
			return rest != ""
		}
	}
	return slices.ContainsFunc(actions, func(a string) bool { return glob(act, a) })
}

// parseProjects turns the projects' roles into rules: each role's
// policies, and a g line binding each of its groups to it. It also lists
// the policies it accepts without enforcing them.
func parseProjects(projects []appspec.Project) (rules, []unenforced, error) {
	var (
		rs    rules
		notes []unenforced
	)
	seen := make(map[string]bool, len(projects))
	for _, p := range projects {
		if p.Name == "" {
			return rules{}, nil, errors.New("project with an empty name")
		}
		if seen[p.Name] {
			return rules{}, nil, fmt.Errorf("duplicate project %q", p.Name)
		}
		seen[p.Name] = true
		for _, role := range p.Roles {
			r, n, err := parseProjectRole(p.Name, role)
			if err != nil {
				return rules{}, nil, err
			}
			rs = concat(rs, r)
			notes = append(notes, n...)
		}
	}
	return rs, notes, nil
}

func parseProjectRole(project string, role appspec.ProjectRole) (rules, []unenforced, error) {
	if role.Name == "" || strings.ContainsAny(role.Name, ":,") {
		return rules{}, nil, fmt.Errorf("project %s: invalid role name %q", project, role.Name)
	}
	source := "project " + project + " role " + role.Name
	sub := ProjectRoleSubject(project, role.Name)
	var (
		rs    rules
		notes []unenforced
	)
	for i, text := range role.Policies {
		fields, err := parseProjectLine(project, sub, text)
		if err != nil {
			return rules{}, nil, &PolicyError{Source: source, Line: i + 1, Text: text, Err: err}
		}
		if n, ok := unenforcedRule(fields); ok {
			n.source, n.line, n.text = source, i+1, strings.TrimSpace(text)
			notes = append(notes, n)
		}
		rs.addLine(fields)
	}
	for _, group := range role.Groups {
		if strings.TrimSpace(group) == "" {
			return rules{}, nil, fmt.Errorf("project %s role %s: empty group", project, role.Name)
		}
		rs.g = append(rs.g, []string{strings.TrimSpace(group), sub})
	}
	return rs, notes, nil
}

// parseProjectLine parses a project role's policy, which must be a p line
// for the role's own subject on applications or logs inside the project
// (<project>/...) or on the project itself.
func parseProjectLine(project, sub, text string) ([]string, error) {
	if strings.ContainsAny(text, "\r\n") {
		return nil, errors.New("a policy must be a single line")
	}
	fields, err := parseLine(text, MatchGlob)
	if err != nil || fields == nil {
		return fields, err
	}
	if fields[0] != "p" {
		return nil, errors.New("project roles take only p lines; bind groups with the role's groups")
	}
	if fields[1] != sub {
		return nil, fmt.Errorf("subject %q must be %q", fields[1], sub)
	}
	switch res, obj := fields[2], fields[4]; res {
	case ResourceProjects:
		if obj != project {
			return nil, fmt.Errorf("object %q must be the project %s", obj, project)
		}
	case ResourceApplications, ResourceLogs, ResourceApplicationSets, resExec:
		if rest, ok := strings.CutPrefix(obj, project+"/"); !ok || rest == "" {
			return nil, fmt.Errorf("object %q is outside project %s: want %s/<application>", obj, project, project)
		}
	default:
		return nil, fmt.Errorf("resource %q is not allowed in project roles: want %s, %s, %s, %s or %s",
			res, ResourceApplications, ResourceLogs, ResourceApplicationSets, resExec, ResourceProjects)
	}
	return fields, nil
}

// glob reports whether s matches pattern, in which * matches any run of
// characters, slashes included (as in Argo CD), ? matches one character,
// and every other character matches itself.
func glob(pattern, s string) bool {
	if !strings.ContainsAny(pattern, "*?") {
		return pattern == s
	}
	p, v := []rune(pattern), []rune(s)
	pi, vi := 0, 0
	star, mark := -1, 0 // last * in p, and where in v it began matching
	for vi < len(v) {
		switch {
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, vi
			pi++
		case pi < len(p) && (p[pi] == '?' || p[pi] == v[vi]):
			pi++
			vi++
		case star >= 0:
			mark++
			pi, vi = star+1, mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// matchAction reports whether the requested action matches a policy's:
// by glob, or the bare "action" granting every action/... request.
func matchAction(req, pattern string) bool {
	return glob(pattern, req) || pattern == ActionAction && strings.HasPrefix(req, actionPrefix)
}
