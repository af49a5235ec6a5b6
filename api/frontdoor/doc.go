// Package frontdoor is Windlass's optional Kubernetes front door: it
// watches Argo CD's Application and AppProject custom resources
// (argoproj.io/v1alpha1) in chosen namespaces and keeps one Windlass app
// or project per resource.
//
//   - A created or changed Application creates or updates its app through
//     the REST API's own project check and setSpec (Update-With-Start).
//   - A deleted Application deletes its app: with Argo CD's resources
//     finalizer the app's resources go too (foreground or background),
//     then the finalizer is released; without it the resources stay.
//   - The app's sync, health, revision and last operation are written to
//     the resource's status under Argo CD's field names, only when they
//     change; a spec that does not validate is reported there as an
//     InvalidSpecError condition and nothing is applied.
//   - AppProject resources in the same namespaces create, update and
//     delete projects likewise (a project is deleted once no app uses it);
//     their status holds only conditions.
//   - An operation.sync written on an Application starts a sync of its
//     app and is then removed, as Argo CD's controller takes it on.
//
// The front door writes nothing of a resource but its status, the
// removal of a taken operation, and the removal of its own finalizer.
package frontdoor
