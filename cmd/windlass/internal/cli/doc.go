// Package cli is the client of Windlass's REST API, as argocd is of Argo
// CD's: windlass login, logout, app, proj, repo, cluster and account. Its
// errors carry their exit codes (cmdline.ExitCode).
package cli
