// Package health assesses the health of live Kubernetes objects with Argo CD's
// statuses and semantics.
//
// A Checker decides in this order, and the first that applies wins:
//
//  1. No object: Missing. An object with a deletionTimestamp: Progressing.
//  2. A Lua health script configured for the object's group and kind, inline
//     (Options.Inline, like argocd-cm's resource.customizations.health.<group_kind>)
//     before a directory tree (Options.CustomizationsDir, laid out like Argo
//     CD's resource_customizations: <group>/<Kind>/health.lua, or
//     <Kind>/health.lua for the core group; "_" in a directory name is a
//     wildcard). Exact matches beat wildcards.
//  3. A built-in check: Deployment, StatefulSet, DaemonSet, ReplicaSet, Pod,
//     Job, CronJob, Service, Ingress, PersistentVolumeClaim,
//     HorizontalPodAutoscaler and APIService.
//  4. kstatus, for objects that publish standard conditions or an observed
//     generation: Current is Healthy, InProgress and Terminating are
//     Progressing, Failed is Degraded, NotFound is Missing; Unknown falls
//     through.
//  5. Otherwise Healthy.
//
// Every result other than Healthy carries a message.
//
// Lua scripts see the object as the global obj and return a table
// {status = ..., message = ...}. Each run gets a fresh interpreter with only
// the base, table and string libraries and an os table of time, date, clock
// and difftime; require("os") returns that table, as Argo CD's scripts
// expect. Loading code, files, modules and processes is not available. A run is
// bounded by a timeout, an instruction budget, call-stack and value-stack
// sizes, a budget for the bytes ".." and the string library may produce, and
// a watch on heap growth while it runs; Options sets them, and New's defaults
// (1 s, 10 million instructions, 64 MiB) hold for every caller. A script that
// breaks a limit, fails or returns something invalid yields Unknown, as in
// Argo CD, with ScriptError set and a message naming the script and why
// ("lua health script for apps/Deployment exceeded its memory budget of 64
// MiB"). Compiled scripts are shared, and a Checker is safe for concurrent use.
//
// Checker.Compile runs other Lua scripts, such as resource actions, in the
// same sandbox under the same limits; Script.Run returns their value as JSON.
package health
