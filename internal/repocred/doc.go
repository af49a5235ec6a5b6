// Package repocred finds the credential of a repository by URL at run
// time: a registered repository (longest URL prefix) first, then the
// longest matching credential template (Argo CD's repocreds). The
// answer carries the secrets, so only activities call it, and nothing
// it returns may enter a workflow input, result, log or API response.
//
// A Credential turns into what each client needs: basic or bearer
// headers, a TLS configuration (client certificate, custom CA, insecure)
// and a proxy that honours noProxy.
package repocred
