package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

const (
	apiPath   = appsPath + "/api"
	apiOpPath = apiPath + "/operation"
)

// selected is the answer of an app list by label selector: api in
// team-a and web in default.
var selected = ok(map[string]any{"items": []map[string]any{
	{"name": "api", "project": "team-a", "labels": map[string]string{"tier": "backend"}},
	{"name": "web", "project": "default", "labels": map[string]string{"tier": "backend"}},
}})

func TestCLIAppSelectors(t *testing.T) {
	runCases(t, []cliCase{
		{
			name: "app sync several by name and selector",
			args: "app sync web -l tier=backend",
			routes: map[string][]reply{
				"GET " + appsPath:           selected,
				"GET " + opPath:             progressReplies[:1],
				"GET " + apiOpPath:          progressReplies[:1],
				"POST " + webPath + "/sync": {{status: 200, body: answer(200, syncResult(workflows.PhaseSucceeded, "", nil)).body, after: "GET " + opPath}},
				"POST " + apiPath + "/sync": {{status: 409, body: answer(409, syncResult(workflows.PhaseFailed, "wave 0 failed", nil)).body, after: "GET " + apiOpPath}},
			},
			want: []string{
				"GET /api/v1/applications?selector=tier%3Dbackend",
				"GET /api/v1/applications/web/operation", `POST /api/v1/applications/web/sync {}`,
				"GET /api/v1/applications/api/operation?project=team-a", `POST /api/v1/applications/api/sync?project=team-a {}`,
			},
			code: cmdline.ExitFailed,
		},
		{
			name: "app sync several names async",
			args: "app sync web api --async",
			routes: map[string][]reply{
				"POST " + webPath + "/sync": {answer(202, workflows.SyncAccepted{ID: "sync/default/web/5"})},
				"POST " + apiPath + "/sync": {answer(202, workflows.SyncAccepted{ID: "sync/default/api/2"})},
			},
			want: []string{`POST /api/v1/applications/api/sync?wait=false {}`, `POST /api/v1/applications/web/sync?wait=false {}`},
		},
		{
			name:   "app sync selector matches none",
			args:   "app sync -l tier=none --project team-a",
			routes: map[string][]reply{"GET " + appsPath: ok(map[string]any{"items": []any{}})},
			want:   []string{"GET /api/v1/applications?project=team-a&selector=tier%3Dnone"},
			code:   cmdline.ExitNotFound,
		},
		{name: "app sync without name or selector", args: "app sync", code: cmdline.ExitUsage},
		{
			name:  "app delete by selector",
			args:  "app delete --selector tier=backend --cascade orphan",
			stdin: "yes\n",
			routes: map[string][]reply{
				"GET " + appsPath:   selected,
				"DELETE " + apiPath: ok(workflows.DeleteResult{}),
				"DELETE " + webPath: ok(workflows.DeleteResult{Resources: []cluster.ResourceResult{{ResourceKey: deployKey, Action: cluster.ActionOrphaned}}}),
			},
			want: []string{
				"GET /api/v1/applications?selector=tier%3Dbackend",
				"DELETE /api/v1/applications/api?cascade=orphan&project=team-a",
				"DELETE /api/v1/applications/web?cascade=orphan&project=default",
			},
		},
		{
			name:   "app delete by selector not confirmed",
			args:   "app delete -l tier=backend",
			stdin:  "n\n",
			routes: map[string][]reply{"GET " + appsPath: selected},
			want:   []string{"GET /api/v1/applications?selector=tier%3Dbackend"},
			code:   cmdline.ExitError,
		},
		{
			name: "app wait degraded or suspended",
			args: "app wait web --degraded --suspended",
			routes: map[string][]reply{"GET " + webPath: {
				answer(200, webApp(appspec.SyncOutOfSync, appspec.HealthProgressing, nil)),
				answer(200, webApp(appspec.SyncOutOfSync, appspec.HealthDegraded, nil)),
			}},
			want: []string{"GET /api/v1/applications/web"},
		},
		{
			name: "app wait selector",
			args: "app wait -l tier=backend --health",
			routes: map[string][]reply{
				"GET " + appsPath: selected,
				"GET " + apiPath:  ok(webApp(appspec.SyncSynced, appspec.HealthHealthy, nil)),
				"GET " + webPath:  {answer(200, webApp(appspec.SyncSynced, appspec.HealthSuspended, nil)), answer(200, webApp(appspec.SyncSynced, appspec.HealthHealthy, nil))},
			},
			want: []string{"GET /api/v1/applications?selector=tier%3Dbackend", "GET /api/v1/applications/api?project=team-a", "GET /api/v1/applications/web?project=default"},
		},
		{
			name:   "app wait suspended times out",
			args:   "app wait web --suspended --timeout 200ms",
			routes: map[string][]reply{"GET " + webPath: ok(webApp(appspec.SyncSynced, appspec.HealthHealthy, nil))},
			want:   []string{"GET /api/v1/applications/web"},
			code:   cmdline.ExitTimeout,
		},
	})
}

// paramsApp is web with the parameters of every tool.
func paramsApp() workflows.AppView {
	v := webApp(appspec.SyncSynced, appspec.HealthHealthy, nil)
	v.Spec.Source = appspec.Source{RepoURL: "https://charts.acme.io", Chart: "web", TargetRevision: "1.0.0", Helm: &appspec.Helm{
		ReleaseName: "web-prod", ValueFiles: []string{"values-prod.yaml"}, Values: "replicas: 2\n",
		Parameters:     []appspec.HelmParameter{{Name: "image.tag", Value: "v1"}, {Name: "port", Value: "8080", ForceString: true}},
		FileParameters: []appspec.HelmFileParameter{{Name: "config", Path: "files/config.toml"}},
	}}
	return v
}

// multiApp is web with a Kustomize, a Jsonnet and a plugin source.
func multiApp() workflows.AppView {
	v := webApp(appspec.SyncSynced, appspec.HealthHealthy, nil)
	v.Spec.Source = appspec.Source{}
	v.Spec.Sources = []appspec.Source{
		{RepoURL: "https://github.com/acme/deploy.git", Path: "kustomize", Kustomize: &appspec.Kustomize{
			NamePrefix: "prod-", Images: []string{"nginx=nginx:1.27", "registry.acme.io:5000/web:v1"}, Replicas: []appspec.KustomizeReplica{{Name: "web", Count: 3}},
		}},
		{RepoURL: "https://github.com/acme/deploy.git", Path: "jsonnet", Directory: &appspec.Directory{Recurse: true, Exclude: "*.libsonnet",
			Jsonnet: &appspec.Jsonnet{TLAs: []appspec.JsonnetVar{{Name: "env", Value: "prod"}}, ExtVars: []appspec.JsonnetVar{{Name: "replicas", Value: "3", Code: true}}}}},
		{RepoURL: "https://github.com/acme/deploy.git", Path: "cmp", Plugin: &appspec.Plugin{Name: "envsubst", Env: []appspec.EnvVar{{Name: "STAGE", Value: "prod"}}}},
	}
	return v
}

// The sources of multiApp as the PATCH of an unchanged one holds them.
const (
	kustomizeSource = `{"kustomize":{"images":["nginx=nginx:1.27","registry.acme.io:5000/web:v1"],"namePrefix":"prod-","replicas":[{"count":3,"name":"web"}]},"path":"kustomize","repoURL":"https://github.com/acme/deploy.git"}`
	jsonnetSource   = `{"directory":{"exclude":"*.libsonnet","jsonnet":{"extVars":[{"code":true,"name":"replicas","value":"3"}],"tlas":[{"name":"env","value":"prod"}]},"recurse":true},"path":"jsonnet","repoURL":"https://github.com/acme/deploy.git"}`
	pluginSource    = `{"path":"cmp","plugin":{"env":[{"name":"STAGE","value":"prod"}],"name":"envsubst"},"repoURL":"https://github.com/acme/deploy.git"}`
)

func TestCLIAppParams(t *testing.T) {
	reconciled := func(at time.Time) workflows.AppView {
		v := webApp(appspec.SyncSynced, appspec.HealthHealthy, nil)
		v.Status.ReconciledAt = at
		return v
	}
	runCases(t, []cliCase{
		{
			name: "app get refresh",
			args: "app get web --refresh",
			routes: map[string][]reply{
				"GET " + webPath:               {answer(200, reconciled(t0)), answer(200, reconciled(t0)), answer(200, reconciled(t0.Add(time.Minute)))},
				"POST " + webPath + "/refresh": {{status: 202}},
			},
			want: []string{"GET /api/v1/applications/web", "POST /api/v1/applications/web/refresh"},
		},
		{
			name: "app get hard refresh times out",
			args: "app get web --hard-refresh --project team-a --timeout 100ms",
			routes: map[string][]reply{
				"GET " + webPath:               ok(reconciled(t0)),
				"POST " + webPath + "/refresh": {{status: 202}},
			},
			want: []string{"GET /api/v1/applications/web?project=team-a", "POST /api/v1/applications/web/refresh?hard=true&project=team-a"},
			code: cmdline.ExitTimeout,
		},
		{
			name:   "app get show params helm",
			args:   "app get web --show-params",
			routes: map[string][]reply{"GET " + webPath: ok(paramsApp())},
			want:   []string{"GET /api/v1/applications/web"},
		},
		{
			name:   "app get show params of several sources",
			args:   "app get web --show-params",
			routes: map[string][]reply{"GET " + webPath: ok(multiApp())},
			want:   []string{"GET /api/v1/applications/web"},
		},
		{
			name: "app set helm parameters",
			args: "app set web -p image.tag=v2 --helm-set replicas=3 --helm-set-string port=9090 --values values-eu.yaml --values values-prod.yaml --release-name web --allow-empty",
			routes: map[string][]reply{
				"GET " + webPath:   ok(paramsApp()),
				"PATCH " + webPath: ok(paramsApp()),
			},
			want: []string{"GET /api/v1/applications/web",
				`PATCH /api/v1/applications/web {"source":{"helm":{"parameters":[{"name":"image.tag","value":"v2"},{"forceString":true,"name":"port","value":"9090"},{"name":"replicas","value":"3"}],` +
					`"releaseName":"web","valueFiles":["values-prod.yaml","values-eu.yaml"]}},"syncPolicy":{"automated":{"allowEmpty":true}}}`},
		},
		{
			name: "app set kustomize of a source",
			args: "app set web --source-position 1 --kustomize-image nginx=nginx:1.28 --kustomize-image redis:7 --kustomize-replica web=5 --namesuffix -eu --revision v2",
			routes: map[string][]reply{
				"GET " + webPath:   ok(multiApp()),
				"PATCH " + webPath: ok(multiApp()),
			},
			want: []string{"GET /api/v1/applications/web",
				`PATCH /api/v1/applications/web {"sources":[{"kustomize":{"images":["nginx=nginx:1.28","registry.acme.io:5000/web:v1","redis:7"],"namePrefix":"prod-","nameSuffix":"-eu","replicas":[{"count":5,"name":"web"}]},"path":"kustomize","repoURL":"https://github.com/acme/deploy.git","targetRevision":"v2"},` +
					jsonnetSource + `,{"path":"cmp","plugin":{"env":[{"name":"STAGE","value":"prod"}],"name":"envsubst"},"repoURL":"https://github.com/acme/deploy.git"}]}`},
		},
		{
			name: "app set jsonnet and directory",
			args: "app set web --source-position 2 --jsonnet-tla-str env=staging --jsonnet-ext-var-str region=eu --directory-recurse false --directory-include *.jsonnet",
			routes: map[string][]reply{
				"GET " + webPath:   ok(multiApp()),
				"PATCH " + webPath: ok(multiApp()),
			},
			want: []string{"GET /api/v1/applications/web",
				`PATCH /api/v1/applications/web {"sources":[` + kustomizeSource + `,` +
					`{"directory":{"exclude":"*.libsonnet","include":"*.jsonnet","jsonnet":{"extVars":[{"code":true,"name":"replicas","value":"3"},{"name":"region","value":"eu"}],"tlas":[{"name":"env","value":"staging"}]}},"path":"jsonnet","repoURL":"https://github.com/acme/deploy.git"},` +
					pluginSource + `]}`},
		},
		{
			name: "app set plugin env on a single source",
			args: "app set web --plugin-env STAGE=prod",
			routes: map[string][]reply{
				"GET " + webPath:   ok(webApp(appspec.SyncSynced, appspec.HealthHealthy, nil)),
				"PATCH " + webPath: ok(webApp(appspec.SyncSynced, appspec.HealthHealthy, nil)),
			},
			want: []string{"GET /api/v1/applications/web", `PATCH /api/v1/applications/web {"source":{"plugin":{"env":[{"name":"STAGE","value":"prod"}]}}}`},
		},
		{
			name:   "app set parameter of several sources without position",
			args:   "app set web -p a=b",
			routes: map[string][]reply{"GET " + webPath: ok(multiApp())},
			want:   []string{"GET /api/v1/applications/web"},
			code:   cmdline.ExitUsage,
		},
		{
			name:   "app set bad parameter",
			args:   "app set web --helm-set image.tag",
			routes: map[string][]reply{"GET " + webPath: ok(paramsApp())},
			want:   []string{"GET /api/v1/applications/web"},
			code:   cmdline.ExitUsage,
		},
		{name: "app set allow-empty with manual policy", args: "app set web --sync-policy none --allow-empty", code: cmdline.ExitUsage},
	})
}

func TestCLIAppUnset(t *testing.T) {
	runCases(t, []cliCase{
		{
			name: "app unset helm",
			args: "app unset web -p image.tag --parameter port --values values-prod.yaml --values-literal --release-name --helm-set-file config",
			routes: map[string][]reply{
				"GET " + webPath:   ok(paramsApp()),
				"PATCH " + webPath: ok(paramsApp()),
			},
			want: []string{"GET /api/v1/applications/web",
				`PATCH /api/v1/applications/web {"source":{"helm":{"fileParameters":null,"parameters":null,"releaseName":null,"valueFiles":null,"values":null}}}`},
		},
		{
			name: "app unset kustomize of a source",
			args: "app unset web --source-position 1 --kustomize-image registry.acme.io:5000/web --kustomize-replica web --nameprefix --project team-a -o json",
			routes: map[string][]reply{
				"GET " + webPath:   ok(multiApp()),
				"PATCH " + webPath: ok(multiApp()),
			},
			want: []string{"GET /api/v1/applications/web?project=team-a",
				`PATCH /api/v1/applications/web?project=team-a {"sources":[{"kustomize":{"images":["nginx=nginx:1.27"]},"path":"kustomize","repoURL":"https://github.com/acme/deploy.git"},` +
					jsonnetSource + `,{"path":"cmp","plugin":{"env":[{"name":"STAGE","value":"prod"}],"name":"envsubst"},"repoURL":"https://github.com/acme/deploy.git"}]}`},
		},
		{
			name: "app unset jsonnet and directory",
			args: "app unset web --source-position 2 --jsonnet-tla env --jsonnet-ext-var replicas --directory-recurse --directory-exclude",
			routes: map[string][]reply{
				"GET " + webPath:   ok(multiApp()),
				"PATCH " + webPath: ok(multiApp()),
			},
			want: []string{"GET /api/v1/applications/web",
				`PATCH /api/v1/applications/web {"sources":[` + kustomizeSource + `,` +
					`{"directory":{"jsonnet":{}},"path":"jsonnet","repoURL":"https://github.com/acme/deploy.git"},` +
					pluginSource + `]}`},
		},
		{
			name: "app unset plugin env",
			args: "app unset web --source-position 3 --plugin-env STAGE",
			routes: map[string][]reply{
				"GET " + webPath:   ok(multiApp()),
				"PATCH " + webPath: ok(multiApp()),
			},
			want: []string{"GET /api/v1/applications/web",
				`PATCH /api/v1/applications/web {"sources":[` + kustomizeSource + `,` +
					jsonnetSource + `,{"path":"cmp","plugin":{"name":"envsubst"},"repoURL":"https://github.com/acme/deploy.git"}]}`},
		},
		{name: "app unset nothing", args: "app unset web", code: cmdline.ExitUsage},
		{name: "app unset flag with a value", args: "app unset web --nameprefix=false", code: cmdline.ExitUsage},
		{
			name:   "app unset position out of range",
			args:   "app unset web --source-position 4 -p a",
			routes: map[string][]reply{"GET " + webPath: ok(multiApp())},
			want:   []string{"GET /api/v1/applications/web"},
			code:   cmdline.ExitUsage,
		},
	})
}

// specJSON is the spec of v as JSON with its keys sorted, as the client
// sends a spec it read back from YAML.
func specJSON(t *testing.T, v workflows.AppView) string {
	t.Helper()
	b, err := json.Marshal(v.Spec)
	var m map[string]any
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err == nil {
		b, err = json.Marshal(m)
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCLIAppEdit(t *testing.T) {
	edited := webApp(appspec.SyncSynced, appspec.HealthHealthy, nil)
	edited.Spec.Source.TargetRevision = "v2"
	web := ok(webApp(appspec.SyncSynced, appspec.HealthHealthy, nil))
	runCases(t, []cliCase{
		{
			name:   "app patch merge",
			args:   `app patch web --patch {"refreshSeconds":30,"syncPolicy":{"automated":null}} --project team-a`,
			routes: map[string][]reply{"PATCH " + webPath: web},
			want:   []string{`PATCH /api/v1/applications/web?project=team-a {"refreshSeconds":30,"syncPolicy":{"automated":null}}`},
		},
		{
			name: "app patch json",
			args: `app patch web --type json --patch [{"op":"replace","path":"/source/targetRevision","value":"v2"},{"op":"remove","path":"/syncPolicy/automated"}]`,
			routes: map[string][]reply{
				"GET " + webPath:   web,
				"PATCH " + webPath: web,
			},
			want: []string{"GET /api/v1/applications/web", `PATCH /api/v1/applications/web {"source":{"targetRevision":"v2"},"syncPolicy":{"automated":null}}`},
		},
		{
			name:   "app patch json that does not apply",
			args:   `app patch web --type json --patch [{"op":"replace","path":"/nothing/here","value":1}]`,
			routes: map[string][]reply{"GET " + webPath: web},
			want:   []string{"GET /api/v1/applications/web"},
			code:   cmdline.ExitUsage,
		},
		{name: "app patch not json", args: "app patch web --patch {refreshSeconds:30}", code: cmdline.ExitUsage},
		{name: "app patch bad type", args: `app patch web --patch {} --type strategic`, code: cmdline.ExitUsage},
		{
			name:  "app edit",
			args:  "app edit web",
			env:   map[string]string{"EDITOR": "sh $DIR/edit.sh"},
			files: map[string]string{"edit.sh": "sed -i -e 's/targetRevision: main/targetRevision: v2/' \"$1\"\n"},
			routes: map[string][]reply{
				"GET " + webPath: web,
				"PUT " + webPath: ok(edited),
			},
			want: []string{"GET /api/v1/applications/web", "PUT /api/v1/applications/web " + specJSON(t, edited)},
		},
		{
			name:   "app edit without changes",
			args:   "app edit web",
			env:    map[string]string{"EDITOR": "true"},
			routes: map[string][]reply{"GET " + webPath: web},
			want:   []string{"GET /api/v1/applications/web"},
		},
		{
			name:   "app edit editor fails",
			args:   "app edit web",
			env:    map[string]string{"VISUAL": "exit 3;"},
			routes: map[string][]reply{"GET " + webPath: web},
			want:   []string{"GET /api/v1/applications/web"},
			code:   cmdline.ExitError,
		},
		{
			name: "app add-source to a single source",
			args: "app add-source web --repo https://github.com/acme/values.git --ref values --revision main",
			routes: map[string][]reply{
				"GET " + webPath:   web,
				"PATCH " + webPath: web,
			},
			want: []string{"GET /api/v1/applications/web", `PATCH /api/v1/applications/web {"source":null,"sources":[` +
				`{"path":"web","repoURL":"https://github.com/acme/deploy.git","targetRevision":"main"},{"repoURL":"https://github.com/acme/values.git","targetRevision":"main","ref":"values"}]}`},
		},
		{
			name: "app add-source first",
			args: "app add-source web --repo https://charts.acme.io --chart redis --revision 7.* --source-position 1 --source-name cache",
			routes: map[string][]reply{
				"GET " + webPath:   ok(multiApp()),
				"PATCH " + webPath: web,
			},
			want: []string{"GET /api/v1/applications/web", `PATCH /api/v1/applications/web {"source":null,"sources":[` +
				`{"repoURL":"https://charts.acme.io","targetRevision":"7.*","chart":"redis","name":"cache"},` + kustomizeSource + `,` + jsonnetSource + `,` + pluginSource + `]}`},
		},
		{name: "app add-source without repo", args: "app add-source web --path x", code: cmdline.ExitUsage},
		{
			name: "app remove-source",
			args: "app remove-source web --source-position 2",
			routes: map[string][]reply{
				"GET " + webPath:   ok(multiApp()),
				"PATCH " + webPath: web,
			},
			want: []string{"GET /api/v1/applications/web", `PATCH /api/v1/applications/web {"sources":[` + kustomizeSource + `,` + pluginSource + `]}`},
		},
		{
			name:   "app remove-source of a single source",
			args:   "app remove-source web --source-position 1",
			routes: map[string][]reply{"GET " + webPath: web},
			want:   []string{"GET /api/v1/applications/web"},
			code:   cmdline.ExitUsage,
		},
		{name: "app remove-source without position", args: "app remove-source web", code: cmdline.ExitUsage},
		{
			name:  "app edit of several sources",
			args:  "app edit web --project team-a",
			env:   map[string]string{"EDITOR": "sh $DIR/edit.sh"},
			files: map[string]string{"edit.sh": "grep -q '^source:' \"$1\" && exit 1; sed -i -e 's/path: cmp/path: cmp2/' \"$1\"\n"},
			routes: map[string][]reply{
				"GET " + webPath: ok(multiApp()),
				"PUT " + webPath: ok(multiApp()),
			},
			want: []string{"GET /api/v1/applications/web?project=team-a",
				"PUT /api/v1/applications/web?project=team-a " + strings.Replace(strings.Replace(specJSON(t, multiApp()), `"path":"cmp"`, `"path":"cmp2"`, 1), `"source":{"repoURL":""},`, "", 1)},
		},
	})
}

// An edit the API refuses is kept for the user to fix.
func TestCLIAppEditRefusedIsKept(t *testing.T) {
	b := newFakeBed(t, map[string][]reply{
		"GET " + webPath: ok(webApp(appspec.SyncSynced, appspec.HealthHealthy, nil)),
		"PUT " + webPath: {problemReply(400, "destination.namespace: not a DNS label", "destination.namespace")},
	}, map[string]string{"edit.sh": "sed -i -e 's/namespace: web/namespace: Web_/' \"$1\"\n"})
	run := b.exec("app edit web", "", false, map[string]string{"EDITOR": "sh $DIR/edit.sh", "TMPDIR": "$DIR"})
	if run.code != cmdline.ExitError {
		t.Fatalf("exit code %d, want %d; stderr:\n%s", run.code, cmdline.ExitError, run.stderr)
	}
	kept, err := filepath.Glob(filepath.Join(b.dir, "windlass-edit-*", "web.yaml"))
	if err != nil || len(kept) != 1 {
		t.Fatalf("kept files %v, %v; stderr:\n%s", kept, err, run.stderr)
	}
	if !strings.Contains(run.stderr, "kept in "+kept[0]) {
		t.Errorf("stderr does not name the kept file %s:\n%s", kept[0], run.stderr)
	}
	content, err := os.ReadFile(kept[0])
	if err != nil || !strings.Contains(string(content), "namespace: Web_") {
		t.Errorf("kept file: %v\n%s", err, content)
	}
}

func TestCLIAppCreateFlags(t *testing.T) {
	saved := []reply{answer(201, savedApp("team-a", "web"))}
	runCases(t, []cliCase{
		{
			name: "app create from flags",
			args: "app create web --project team-a --repo https://github.com/acme/deploy.git --path web --revision main --dest-server https://kubernetes.default.svc " +
				"--dest-namespace web --sync-policy automated --auto-prune --self-heal --sync-option CreateNamespace=true --label team=payments --kustomize-image nginx:1.27",
			routes: map[string][]reply{"POST " + appsPath: saved},
			want: []string{`POST /api/v1/applications {"name":"web","project":"team-a","source":{"repoURL":"https://github.com/acme/deploy.git","path":"web","targetRevision":"main","kustomize":{"images":["nginx:1.27"]}},` +
				`"destination":{"server":"https://kubernetes.default.svc","namespace":"web"},"syncPolicy":{"automated":{"prune":true,"selfHeal":true},"syncOptions":["CreateNamespace=true"]},"labels":{"team":"payments"}}`},
		},
		{
			name:   "app create helm chart upsert",
			args:   "app create web --upsert --repo https://charts.acme.io --helm-chart web --revision 1.2.3 --dest-name prod --dest-namespace web --values values-prod.yaml --helm-set image.tag=v2 --release-name web-prod",
			routes: map[string][]reply{"POST " + appsPath: {answer(200, savedApp("default", "web"))}},
			want: []string{`POST /api/v1/applications?upsert=true {"name":"web","project":"default","source":{"repoURL":"https://charts.acme.io","targetRevision":"1.2.3","chart":"web",` +
				`"helm":{"releaseName":"web-prod","valueFiles":["values-prod.yaml"],"parameters":[{"name":"image.tag","value":"v2"}]}},"destination":{"name":"prod","namespace":"web"}}`},
		},
		{name: "app create without repo", args: "app create web --path web", code: cmdline.ExitUsage},
		{name: "app create file and flags", args: "app create web -f $DIR/web.yaml --repo https://github.com/acme/deploy.git", code: cmdline.ExitUsage},
		{name: "app create manual with self-heal", args: "app create web --repo r --sync-policy none --self-heal", code: cmdline.ExitUsage},
	})
}
