// Package migrate takes over a live Argo CD installation: Read gets its
// Applications, AppProjects, argocd-cm, argocd-rbac-cm and labelled
// Secrets from the cluster (read only: nothing of Argo CD's is ever
// written), Build turns them into a Plan of one Row per object against
// what Windlass has now, and Plan.Apply creates the Windlass equivalents
// through a Writer (the REST API in the CLI). Settings Windlass keeps in
// files rather than behind its API (the RBAC policy, Lua health checks)
// are written to an output directory for the operator to point Windlass
// at. Secret values go from the Secrets to the Writer and nowhere else:
// rows name fields and URLs, never values.
package migrate
