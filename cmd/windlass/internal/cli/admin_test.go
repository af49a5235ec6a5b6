package cli

import (
	"net/http"
	"testing"
	"time"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// The cases of proj, repo, cluster and account.

var teamA = appspec.Project{
	Name: "team-a", Description: "Team A", SourceRepos: []string{"https://github.com/acme/*"},
	Destinations:             []appspec.ProjectDestination{{Server: appspec.InClusterServer, Namespace: "team-a-*"}},
	ClusterResourceWhitelist: []appspec.GroupKind{{Group: "", Kind: "Namespace"}},
	SyncWindows:              []appspec.SyncWindow{{Kind: appspec.WindowDeny, Schedule: "0 22 * * *", Duration: "8h", Applications: []string{"*"}, ManualSync: true}},
	Roles:                    []appspec.ProjectRole{{Name: "ci", Description: "CI deploys", Policies: []string{"p, proj:team-a:ci, applications, sync, team-a/*, allow"}, Groups: []string{"acme:ci"}}},
}

var minted = map[string]any{"token": mintedToken, "id": "tok-7", "expiresAt": t0.Add(24 * time.Hour)}

func tokenList() []reply {
	return ok(map[string]any{"items": []map[string]any{
		{"id": "tok-7", "description": "deploy", "issuedAt": t0, "expiresAt": t0.Add(24 * time.Hour)},
		{"id": "tok-8", "issuedAt": t0},
	}})
}

func TestCLIProj(t *testing.T) {
	const tokens = "/api/v1/projects/team-a/roles/ci/tokens"
	runCases(t, []cliCase{
		{
			name:   "proj list",
			args:   "proj list",
			routes: map[string][]reply{"GET /api/v1/projects": ok(map[string]any{"items": []appspec.Project{appspec.DefaultProjectSpec(), teamA}})},
			want:   []string{"GET /api/v1/projects"},
		},
		{
			name:   "proj list yaml",
			args:   "proj list -o yaml",
			routes: map[string][]reply{"GET /api/v1/projects": ok(map[string]any{"items": []appspec.Project{teamA}})},
			want:   []string{"GET /api/v1/projects"},
		},
		{
			name:   "proj get",
			args:   "proj get team-a",
			routes: map[string][]reply{"GET /api/v1/projects/team-a": ok(teamA)},
			want:   []string{"GET /api/v1/projects/team-a"},
		},
		{
			name:   "proj get not found",
			args:   "proj get nope",
			routes: map[string][]reply{"GET /api/v1/projects/nope": {problemReply(404, "project nope not found", "")}},
			want:   []string{"GET /api/v1/projects/nope"},
			code:   cmdline.ExitNotFound,
		},
		{
			name:   "proj create argo",
			args:   "proj create -f $DIR/proj.yml",
			files:  map[string]string{"proj.yml": "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: team-a}\n"},
			routes: map[string][]reply{"POST /api/v1/projects": {answer(201, teamA)}},
			want:   []string{"POST /api/v1/projects apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: team-a}\n"},
		},
		{
			name:   "proj delete",
			args:   "proj delete team-a",
			routes: map[string][]reply{"DELETE /api/v1/projects/team-a": {{status: 204}}},
			want:   []string{"DELETE /api/v1/projects/team-a"},
		},
		{
			name:    "proj role create-token",
			args:    "proj role create-token team-a ci --expires-in 24h --description deploy",
			routes:  map[string][]reply{"POST " + tokens: ok(minted)},
			want:    []string{`POST /api/v1/projects/team-a/roles/ci/tokens {"description":"deploy","expiresIn":"24h"}`},
			printed: mintedToken,
		},
		{
			name:   "proj role create-token forbidden",
			args:   "proj role create-token team-a ci",
			routes: map[string][]reply{"POST " + tokens: {problemReply(403, "admin may not update projects/team-a", "")}},
			want:   []string{`POST /api/v1/projects/team-a/roles/ci/tokens {"expiresIn":"720h"}`},
			code:   cmdline.ExitUnauthorized,
		},
		{name: "proj role create-token bad expiry", args: "proj role create-token team-a ci --expires-in soon", code: cmdline.ExitUsage},
		{
			name:   "proj role list-tokens",
			args:   "proj role list-tokens team-a ci",
			routes: map[string][]reply{"GET " + tokens: tokenList()},
			want:   []string{"GET /api/v1/projects/team-a/roles/ci/tokens"},
		},
		{
			name:   "proj role delete-token",
			args:   "proj role delete-token team-a ci tok-7",
			routes: map[string][]reply{"DELETE " + tokens + "/tok-7": {{status: 204}}},
			want:   []string{"DELETE /api/v1/projects/team-a/roles/ci/tokens/tok-7"},
		},
		{name: "proj role no verb", args: "proj role", code: cmdline.ExitUsage},
	})
}

func TestCLIRepo(t *testing.T) {
	repo := map[string]any{"url": "https://github.com/acme/deploy.git", "project": "team-a", "username": "bot", "hasPassword": true,
		"hasToken": false, "hasSSHKey": false, "connectionState": map[string]string{"status": "Successful"}}
	sshRepo := map[string]any{"url": "git@github.com:acme/infra.git", "hasSSHKey": true, "insecureIgnoreHostKey": false,
		"connectionState": map[string]string{"status": "Failed", "message": "ssh: handshake failed"}}
	runCases(t, []cliCase{
		{
			name:   "repo add password",
			args:   "repo add https://github.com/acme/deploy.git --username bot --password-stdin --project team-a --upsert",
			stdin:  testPassword + "\n",
			routes: map[string][]reply{"POST /api/v1/repositories": {answer(201, repo)}},
			want:   []string{`POST /api/v1/repositories?upsert=true {"url":"https://github.com/acme/deploy.git","project":"team-a","username":"bot","password":"` + testPassword + `"}`},
		},
		{
			name:   "repo add ssh",
			args:   "repo add git@github.com:acme/infra.git --ssh-private-key-path $DIR/id --known-hosts-path $DIR/known_hosts",
			files:  map[string]string{"id": "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n", "known_hosts": "github.com ssh-ed25519 AAAA\n"},
			routes: map[string][]reply{"POST /api/v1/repositories": {answer(201, map[string]any{"url": "git@github.com:acme/infra.git", "hasSSHKey": true, "connectionState": "Successful"})}},
			want: []string{`POST /api/v1/repositories {"url":"git@github.com:acme/infra.git",` +
				`"sshPrivateKey":"-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n","sshKnownHosts":"github.com ssh-ed25519 AAAA\n"}`},
		},
		{
			name:   "repo add token on a terminal",
			args:   "repo add https://gitlab.com/acme/deploy.git --bearer-token-stdin",
			stdin:  testPassword + "\n",
			tty:    true,
			routes: map[string][]reply{"POST /api/v1/repositories": {answer(201, map[string]any{"url": "https://gitlab.com/acme/deploy.git", "hasToken": true})}},
			want:   []string{`POST /api/v1/repositories {"url":"https://gitlab.com/acme/deploy.git","bearerToken":"` + testPassword + `"}`},
		},
		{
			name:   "repo add connection fails",
			args:   "repo add https://github.com/acme/private.git",
			routes: map[string][]reply{"POST /api/v1/repositories": {problemReply(422, "connection test failed: authentication required", "url")}},
			want:   []string{`POST /api/v1/repositories {"url":"https://github.com/acme/private.git"}`},
			code:   cmdline.ExitError,
		},
		{name: "repo add two credentials", args: "repo add https://x --password-stdin --username u --bearer-token-stdin", code: cmdline.ExitUsage},
		{name: "repo add username without password", args: "repo add https://x --username u", code: cmdline.ExitUsage},
		{
			name:   "repo list",
			args:   "repo list",
			routes: map[string][]reply{"GET /api/v1/repositories": ok(map[string]any{"items": []any{repo, sshRepo}})},
			want:   []string{"GET /api/v1/repositories"},
		},
		{
			name:  "repo add helm with client certificate",
			args:  "repo add https://charts.acme.io --type helm --tls-client-cert-path $DIR/c.pem --tls-client-cert-key-path $DIR/k.pem --ca-path $DIR/ca.pem --proxy http://proxy:3128 --no-proxy .acme.io --pass-credentials",
			files: map[string]string{"c.pem": "CERT\n", "k.pem": "KEY\n", "ca.pem": "CA\n"},
			routes: map[string][]reply{"POST /api/v1/repositories": {answer(201, map[string]any{"url": "https://charts.acme.io", "type": "helm", "hasClientCert": true, "hasCA": true,
				"proxy": "http://proxy:3128"})}},
			want: []string{`POST /api/v1/repositories {"url":"https://charts.acme.io","type":"helm","tlsClientCertData":"CERT\n","tlsClientCertKey":"KEY\n",` +
				`"caData":"CA\n","proxy":"http://proxy:3128","noProxy":".acme.io","passCredentials":true}`},
		},
		{name: "repo add cert without key", args: "repo add https://x --tls-client-cert-path c.pem", code: cmdline.ExitUsage},
		{
			name:  "repo add github app",
			args:  "repo add https://ghe.acme.io/acme/deploy.git --github-app-id 12 --github-app-installation-id 34 --github-app-private-key-path $DIR/app.pem --github-app-enterprise-base-url https://ghe.acme.io/api/v3",
			files: map[string]string{"app.pem": "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"},
			routes: map[string][]reply{"POST /api/v1/repositories": {answer(201, map[string]any{"url": "https://ghe.acme.io/acme/deploy.git", "githubAppID": 12,
				"githubAppInstallationID": 34, "hasGithubAppPrivateKey": true, "githubAppEnterpriseBaseUrl": "https://ghe.acme.io/api/v3", "connectionState": "Successful"})}},
			want: []string{`POST /api/v1/repositories {"url":"https://ghe.acme.io/acme/deploy.git","githubAppID":12,"githubAppInstallationID":34,` +
				`"githubAppPrivateKey":"-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n","githubAppEnterpriseBaseUrl":"https://ghe.acme.io/api/v3"}`},
		},
		{name: "repo add github app without key", args: "repo add https://github.com/acme/x.git --github-app-id 1 --github-app-installation-id 2", code: cmdline.ExitUsage},
		{name: "repo add github app and password", args: "repo add https://x --github-app-private-key-path k --username u --password-stdin", code: cmdline.ExitUsage},
		{
			name:   "repocreds add",
			args:   "repocreds add https://github.com/acme/ --username bot --password-stdin",
			stdin:  testPassword + "\n",
			routes: map[string][]reply{"POST /api/v1/repocreds": {answer(201, map[string]any{"url": "https://github.com/acme/", "username": "bot", "hasPassword": true})}},
			want:   []string{`POST /api/v1/repocreds {"url":"https://github.com/acme/","username":"bot","password":"` + testPassword + `"}`},
		},
		{name: "repocreds add has no project", args: "repocreds add https://github.com/acme/ --project team-a", code: cmdline.ExitUsage},
		{
			name: "repocreds list",
			args: "repocreds list",
			routes: map[string][]reply{"GET /api/v1/repocreds": ok(map[string]any{"items": []any{
				map[string]any{"url": "https://github.com/acme/", "username": "bot", "hasPassword": true},
				map[string]any{"url": "oci://registry.acme.io/", "type": "helm", "hasToken": true, "hasCA": true},
				map[string]any{"url": "https://github.com/acme-bots/", "githubAppID": 12, "githubAppInstallationID": 34, "hasGithubAppPrivateKey": true},
			}})},
			want: []string{"GET /api/v1/repocreds"},
		},
		{
			name:   "repocreds rm",
			args:   "repocreds rm https://github.com/acme/",
			routes: map[string][]reply{"DELETE /api/v1/repocreds/https:%2F%2Fgithub.com%2Facme%2F": {{status: 204}}},
			want:   []string{"DELETE /api/v1/repocreds/https:%2F%2Fgithub.com%2Facme%2F"},
		},
		{
			name:   "repo rm",
			args:   "repo rm https://github.com/acme/deploy.git",
			routes: map[string][]reply{"DELETE /api/v1/repositories/https:%2F%2Fgithub.com%2Facme%2Fdeploy.git": {{status: 204}}},
			want:   []string{"DELETE /api/v1/repositories/https:%2F%2Fgithub.com%2Facme%2Fdeploy.git"},
		},
	})
}

func TestCLIGPG(t *testing.T) {
	const armored = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nxjM\n-----END PGP PUBLIC KEY BLOCK-----\n"
	alice := map[string]any{"keyID": "4AEE18F83AFDEB23", "fingerprint": "F00", "owner": "alice <alice@acme.io>", "subType": "ed25519", "keyData": armored}
	runCases(t, []cliCase{
		{
			name:   "gpg add",
			args:   "gpg add --from $DIR/alice.asc",
			files:  map[string]string{"alice.asc": armored},
			routes: map[string][]reply{"POST /api/v1/gpgkeys": {answer(201, map[string]any{"items": []any{alice}})}},
			want:   []string{`POST /api/v1/gpgkeys {"keyData":"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nxjM\n-----END PGP PUBLIC KEY BLOCK-----\n"}`},
		},
		{
			name:   "gpg add from stdin, upsert",
			args:   "gpg add --from - --upsert",
			stdin:  armored,
			routes: map[string][]reply{"POST /api/v1/gpgkeys": {answer(201, map[string]any{"items": []any{alice}})}},
			want:   []string{`POST /api/v1/gpgkeys?upsert=true {"keyData":"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nxjM\n-----END PGP PUBLIC KEY BLOCK-----\n"}`},
		},
		{
			name:   "gpg add refused",
			args:   "gpg add --from $DIR/k.asc",
			files:  map[string]string{"k.asc": "hello"},
			routes: map[string][]reply{"POST /api/v1/gpgkeys": {problemReply(400, "invalid GPG key: not an ASCII-armored public key", "")}},
			want:   []string{`POST /api/v1/gpgkeys {"keyData":"hello"}`},
			code:   cmdline.ExitError,
		},
		{name: "gpg add without --from", args: "gpg add", code: cmdline.ExitUsage},
		{
			name:   "gpg list",
			args:   "gpg list",
			routes: map[string][]reply{"GET /api/v1/gpgkeys": ok(map[string]any{"items": []any{alice}})},
			want:   []string{"GET /api/v1/gpgkeys"},
		},
		{
			name:   "gpg rm",
			args:   "gpg rm 4AEE18F83AFDEB23",
			routes: map[string][]reply{"DELETE /api/v1/gpgkeys/4AEE18F83AFDEB23": {{status: 204}}},
			want:   []string{"DELETE /api/v1/gpgkeys/4AEE18F83AFDEB23"},
		},
	})
}

func TestCLICluster(t *testing.T) {
	prod := map[string]any{"name": "prod", "server": "https://k8s.acme.io:6443", "hasCredentials": true,
		"connectionState": map[string]string{"status": "Successful"}, "labels": map[string]string{"env": "prod"}}
	runCases(t, []cliCase{
		{
			name:   "cluster add token and ca",
			args:   "cluster add --name prod --server https://k8s.acme.io:6443 --bearer-token-stdin --ca-file $DIR/ca.pem",
			stdin:  testPassword + "\n",
			files:  map[string]string{"ca.pem": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"},
			routes: map[string][]reply{"POST /api/v1/clusters": {answer(201, prod)}},
			want: []string{`POST /api/v1/clusters {"name":"prod","server":"https://k8s.acme.io:6443","bearerToken":"` + testPassword +
				`","caData":"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"}`},
		},
		{
			name:   "cluster add client certificate",
			args:   "cluster add --name prod --server https://k8s.acme.io:6443 --cert-file $DIR/c.pem --key-file $DIR/k.pem --insecure",
			files:  map[string]string{"c.pem": "CERT\n", "k.pem": "KEY\n"},
			routes: map[string][]reply{"POST /api/v1/clusters": {answer(201, prod)}},
			want:   []string{`POST /api/v1/clusters {"name":"prod","server":"https://k8s.acme.io:6443","certData":"CERT\n","keyData":"KEY\n","insecure":true}`},
		},
		{
			name:   "cluster add kubeconfig",
			args:   "cluster add --kubeconfig $DIR/kubeconfig --context kind-dev --windlass-server $SERVER",
			files:  map[string]string{"kubeconfig": "apiVersion: v1\nkind: Config\n"},
			routes: map[string][]reply{"POST /api/v1/clusters": {answer(201, map[string]any{"name": "kind-dev", "server": "https://127.0.0.1:6443", "hasCredentials": true})}},
			want:   []string{`POST /api/v1/clusters {"name":"","server":"","kubeconfig":"apiVersion: v1\nkind: Config\n","context":"kind-dev"}`},
		},
		{
			name:   "cluster add labels",
			args:   "cluster add --name prod --server https://k8s.acme.io:6443 --label env=prod --label region=eu",
			routes: map[string][]reply{"POST /api/v1/clusters": {answer(201, prod)}},
			want:   []string{`POST /api/v1/clusters {"name":"prod","server":"https://k8s.acme.io:6443","labels":{"env":"prod","region":"eu"}}`},
		},
		{name: "cluster add bad label", args: "cluster add --name x --server https://x --label novalue", code: cmdline.ExitUsage},
		{name: "cluster add kubeconfig and server", args: "cluster add --kubeconfig $DIR/kc --server https://x", code: cmdline.ExitUsage},
		{name: "cluster add without name", args: "cluster add --server https://x", code: cmdline.ExitUsage},
		{name: "cluster add half a certificate", args: "cluster add --name x --server https://x --cert-file c", code: cmdline.ExitUsage},
		{
			name: "cluster list",
			args: "cluster list",
			routes: map[string][]reply{"GET /api/v1/clusters": ok(map[string]any{"items": []any{
				map[string]any{"name": "in-cluster", "server": appspec.InClusterServer, "hasCredentials": false, "connectionState": "Successful"}, prod,
			}})},
			want: []string{"GET /api/v1/clusters"},
		},
		{
			name:   "cluster rm",
			args:   "cluster rm prod",
			routes: map[string][]reply{"DELETE /api/v1/clusters/prod": {{status: 204}}},
			want:   []string{"DELETE /api/v1/clusters/prod"},
		},
		{
			name:   "cluster rm in use",
			args:   "cluster rm prod",
			routes: map[string][]reply{"DELETE /api/v1/clusters/prod": {problemReply(409, "cluster prod is the destination of 3 applications", "")}},
			want:   []string{"DELETE /api/v1/clusters/prod"},
			code:   cmdline.ExitFailed,
		},
	})
}

func TestCLIAccount(t *testing.T) {
	me := ok(map[string]any{"name": "admin", "groups": []string{"ops"}, "kind": "session", "expiresAt": t0.Add(24 * time.Hour)})
	runCases(t, []cliCase{
		{
			name: "account list",
			args: "account list",
			routes: map[string][]reply{"GET /api/v1/accounts": ok(map[string]any{"items": []map[string]any{
				{"name": "admin", "enabled": true, "capabilities": []string{"login"}},
				{"name": "ci", "enabled": false, "capabilities": []string{"apiKey"}},
			}})},
			want: []string{"GET /api/v1/accounts"},
		},
		{
			name:   "account get-user-info",
			args:   "account get-user-info",
			routes: map[string][]reply{"GET /api/v1/session/userinfo": me},
			want:   []string{"GET /api/v1/session/userinfo"},
		},
		{
			name:   "account update-password",
			args:   "account update-password",
			stdin:  "old-one\n" + testPassword + "\n",
			routes: map[string][]reply{"PUT /api/v1/account/password": {{status: 204}}},
			want:   []string{`PUT /api/v1/account/password {"currentPassword":"old-one","newPassword":"` + testPassword + `"}`},
		},
		{
			name:   "account update-password of another on a terminal",
			args:   "account update-password --account ci",
			stdin:  "old-one\n" + testPassword + "\n" + testPassword + "\n",
			tty:    true,
			routes: map[string][]reply{"PUT /api/v1/account/password": {{status: 204}}},
			want:   []string{`PUT /api/v1/account/password {"currentPassword":"old-one","name":"ci","newPassword":"` + testPassword + `"}`},
		},
		{
			name:  "account update-password mistyped",
			args:  "account update-password",
			stdin: "old-one\n" + testPassword + "\nsomething-else\n",
			tty:   true,
			code:  cmdline.ExitError,
		},
		{
			name:   "account update-password wrong",
			args:   "account update-password",
			stdin:  "old-one\n" + testPassword + "\n",
			routes: map[string][]reply{"PUT /api/v1/account/password": {problemReply(401, "the current password is wrong", "currentPassword")}},
			want:   []string{`PUT /api/v1/account/password {"currentPassword":"old-one","newPassword":"` + testPassword + `"}`},
			code:   cmdline.ExitUnauthorized,
		},
		{
			name:    "account generate-token for the one logged in",
			args:    "account generate-token",
			routes:  map[string][]reply{"GET /api/v1/session/userinfo": me, "POST /api/v1/accounts/admin/tokens": ok(minted)},
			want:    []string{"GET /api/v1/session/userinfo", `POST /api/v1/accounts/admin/tokens {"expiresIn":"720h"}`},
			printed: mintedToken,
		},
		{
			name:    "account generate-token json",
			args:    "account generate-token --account ci --expires-in 1h -o json",
			routes:  map[string][]reply{"POST /api/v1/accounts/ci/tokens": ok(minted)},
			want:    []string{`POST /api/v1/accounts/ci/tokens {"expiresIn":"1h"}`},
			printed: mintedToken,
		},
		{
			name:   "account list-tokens",
			args:   "account list-tokens --account ci",
			routes: map[string][]reply{"GET /api/v1/accounts/ci/tokens": tokenList()},
			want:   []string{"GET /api/v1/accounts/ci/tokens"},
		},
		{
			name:   "account delete-token",
			args:   "account delete-token tok-7 --account ci",
			routes: map[string][]reply{"DELETE /api/v1/accounts/ci/tokens/tok-7": {{status: 204}}},
			want:   []string{"DELETE /api/v1/accounts/ci/tokens/tok-7"},
		},
		{
			name:   "account delete-token unknown",
			args:   "account delete-token tok-9 --account ci",
			routes: map[string][]reply{"DELETE /api/v1/accounts/ci/tokens/tok-9": {problemReply(http.StatusNotFound, "token not found", "")}},
			want:   []string{"DELETE /api/v1/accounts/ci/tokens/tok-9"},
			code:   cmdline.ExitNotFound,
		},
	})
}
