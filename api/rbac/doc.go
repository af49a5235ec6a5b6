// Package rbac authorises API requests with Argo CD's policy format and
// semantics, evaluated by Casbin.
//
// A policy is CSV text of p and g lines; blank lines and lines starting
// with # are ignored:
//
//	p, <subject>, <resource>, <action>, <object>, allow|deny
//	g, <user-or-group>, <role>
//
// Resources are applications, projects, repositories, clusters, accounts,
// logs and applicationsets. Actions are get, create, update, delete, sync,
// rollback, override and action; a resource action is requested as
// action/<group>/<kind>/<name>, and the policy action "action" grants all
// of them, as action/* does. A write to one of an app's resources is
// requested as update/<group>/<kind>/<namespace>/<name> or delete/...
// (the core group and cluster-scoped namespaces are empty); as in Argo CD
// 3, the plain actions update and delete do not grant them, update/* and
// delete/* do. Objects are <project>/<app> for applications and logs, the
// project name for projects, the URL for repositories and clusters, the
// account name for accounts, <project>/<set> for applicationsets, and the
// key ID for gpgkeys.
//
// The rest of Argo CD's vocabulary is accepted but not enforced: the
// resources certificates, exec and extensions, and the action
// invoke. No endpoint asks for them, so such a rule grants
// nothing; New logs each at Warn.
//
// Resources, actions and objects in policies are globs: * matches any run
// of characters, slashes included (so * matches every application and
// https://github.com/acme/* every repository of acme), and ? one
// character. A resource or action glob must match a known resource or
// action. With Config.MatchMode regex (policy.matchMode), the objects of
// policy.csv rules are Go regular expressions instead, matched unanchored
// by Casbin's regexMatch as in Argo CD; resources, actions, the built-in
// rules and project roles stay globs. Invalid lines are rejected with a
// *PolicyError naming the source and line.
//
// Roles come from three places, loaded in this order:
//   - builtin-policy.csv: role:readonly (get on everything) and role:admin
//     (everything), and the user admin bound to role:admin;
//   - Config.PolicyCSV (policy.csv);
//   - the roles of each appspec.Project. A project role's subject is
//     proj:<project>:<role>; its policies must be p lines naming that
//     subject, on applications, logs, applicationsets or exec inside the
//     project (<project>/...) or on the project itself, and its Groups are
//     bound to it.
//
// Enforce allows a request when an allow rule reached from the subject's
// name, one of its groups or the default role (policy.default) matches,
// and no deny rule reached from any of them matches: deny overrides allow.
// Unlike Argo CD, which checks each of these alone and lets any one
// allow, a deny reached from a group or the default role also binds the
// user, and a user's deny also takes away what the default role grants.
// Subjects without a name are anonymous and always denied.
//
// An Enforcer is safe for concurrent use. SetPolicy and SetProjects build
// a new Casbin enforcer and swap it in atomically; on error the old one
// stays in force.
package rbac
