// Package actions holds resource actions: named changes to a live object,
// such as restarting a Deployment or creating a Job from a CronJob.
//
// A Catalog lists the actions available for an object and runs one. Its
// actions come from two places:
//
//   - built-ins, written in Go: restart (Deployment, StatefulSet,
//     DaemonSet), pause and resume (Deployment), scale with a replicas
//     parameter (Deployment, StatefulSet), create-job (CronJob), suspend
//     and resume (CronJob);
//   - Lua scripts in Argo CD's resource_customizations layout:
//     <group>/<Kind>/actions/discovery.lua (<Kind>/actions/... for the core
//     group) returns a table of the available actions keyed by name, each
//     with optional disabled and params fields, and
//     actions/<name>/action.lua returns the changed object (Argo CD's v1
//     form) or a list of operations {operation = "patch" | "create",
//     resource = obj} (the v2 form). A script sees the object as obj and
//     the parameters as actionParams (name to string value).
//
// Directory names match kinds exactly ("_" is no wildcard here, unlike
// health scripts). A Lua action overrides a built-in of the same name; a
// kind with a discovery.lua still offers the built-ins it does not name.
// Scripts run in the health checks' sandbox with the same limits
// (health.Checker.Compile).
//
// Running an action returns operations and applies nothing: a patch of the
// object itself, or the creation of a new object in its namespace. A script
// that fails, breaks a limit or returns anything else is an error.
package actions
