package rbac

import "strings"

// PolicyView is the policy in force, as policy.csv text, for people to
// read (the UI's RBAC page). It holds no secret: subjects, roles and
// patterns only.
type PolicyView struct {
	// Builtin are the built-in roles' lines (role:readonly, role:admin).
	Builtin string `json:"builtin"`
	// Policy are the lines of the configured policy.csv.
	Policy string `json:"policy"`
	// Projects are the lines of the projects' roles.
	Projects string `json:"projects"`
	// DefaultRole is policy.default: the role of every authenticated caller.
	DefaultRole string `json:"defaultRole,omitempty"`
}

// View returns the policy in force.
func (e *Enforcer) View() PolicyView {
	snap := e.cur.Load()
	return PolicyView{
		Builtin: builtinRules.text(), Policy: snap.policy.text(), Projects: snap.projects.text(),
		DefaultRole: snap.defaultRole,
	}
}

// text renders rules as policy.csv lines: p lines, then g lines.
func (r rules) text() string {
	var b strings.Builder
	for _, kind := range []struct {
		prefix string
		lines  [][]string
	}{{"p", r.p}, {"g", r.g}} {
		for _, l := range kind.lines {
			b.WriteString(kind.prefix + ", " + strings.Join(l, ", ") + "\n")
		}
	}
	return b.String()
}
