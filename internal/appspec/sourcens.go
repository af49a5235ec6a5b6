package appspec

import "fmt"

// ArgoControlNamespace is Argo CD's own namespace, where Applications
// need no sourceNamespaces entry: the parser keeps no SourceNamespace
// for it.
const ArgoControlNamespace = "argocd"

// PermitsSourceNamespace reports whether an Application that came from
// the Kubernetes namespace ns (its metadata.namespace: Argo CD's apps in
// any namespace) may belong to the project. A Windlass app has no
// namespace of its own, so the check binds only a project that lists
// sourceNamespaces; then an app from another namespace than Argo CD's
// own must match one of its globs, which may deny with "!".
func (p Project) PermitsSourceNamespace(ns string) bool {
	if ns == "" || len(p.SourceNamespaces) == 0 {
		return true
	}
	allowed := false
	for _, pattern := range p.SourceNamespaces {
		match, denied := matchOrDeny(pattern, ns)
		if denied {
			return false
		}
		allowed = allowed || match
	}
	return allowed
}

func (p Project) checkSourceNamespace(app Application) error {
	if p.PermitsSourceNamespace(app.SourceNamespace) {
		return nil
	}
	return &FieldError{Field: "sourceNamespace", Reason: fmt.Sprintf("applications from namespace %s are not permitted in project %s (its sourceNamespaces)", app.SourceNamespace, p.Name)}
}
