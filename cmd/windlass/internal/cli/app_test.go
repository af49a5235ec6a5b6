package cli

import (
	"net/http"
	"testing"
	"time"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/depends"
	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func key(group, kind, ns, name string) appspec.ResourceKey {
	return appspec.ResourceKey{Group: group, Kind: kind, Namespace: ns, Name: name}
}

var (
	deployKey = key("apps", "Deployment", "web", "web")
	svcKey    = key("", "Service", "web", "web")
	oldCMKey  = key("", "ConfigMap", "web", "old")
	hookKey   = key("batch", "Job", "web", "migrate")
)

// webApp is the application the app cases ask for.
func webApp(sync appspec.SyncStatus, health appspec.HealthStatus, op *workflows.Operation) workflows.AppView {
	return workflows.AppView{
		Spec: appspec.Application{
			Name: "web", Project: "default",
			Source:      appspec.Source{RepoURL: "https://github.com/acme/deploy.git", Path: "web", TargetRevision: "main"},
			Destination: appspec.Destination{Server: appspec.InClusterServer, Namespace: "web"},
			SyncPolicy: &appspec.SyncPolicy{
				Automated: &appspec.Automated{Prune: true}, SyncOptions: []string{"CreateNamespace=true"},
			},
		},
		Status: workflows.AppStatus{
			Sync: sync, Health: health, Revision: "main", SHA: "1a2b3c4d5e6f7081", ReconciledAt: t0,
			Resources: []appspec.ResourceStatus{
				{ResourceKey: deployKey, Status: appspec.SyncOutOfSync, Health: appspec.HealthProgressing, HealthMessage: "1 of 2 replicas updated"},
				{ResourceKey: svcKey, Status: appspec.SyncSynced, Health: appspec.HealthHealthy},
				{ResourceKey: oldCMKey, Status: appspec.SyncOutOfSync, RequiresPruning: true},
			},
			Operation: op,
		},
	}
}

// operation is a sync in progress at step i (from 0) of 3, with the
// resources done so far.
func operation(phase string, step *cluster.Step, i int, done ...cluster.ResourceResult) *workflows.Operation {
	op := &workflows.Operation{SyncID: "sync/default/web/4", Phase: phase, Initiator: "api", StartedAt: t0, Resources: done}
	if step != nil {
		op.Step, op.StepIndex, op.Steps = step, i, 3
	}
	return op
}

var (
	hookDone   = cluster.ResourceResult{ResourceKey: hookKey, Action: cluster.ActionHookSucceeded, Phase: "PreSync", Hook: true, Health: appspec.HealthHealthy, Message: "job completed"}
	deployDone = cluster.ResourceResult{ResourceKey: deployKey, Action: cluster.ActionConfigured, Phase: "Sync", Health: appspec.HealthHealthy}
	svcDone    = cluster.ResourceResult{ResourceKey: svcKey, Action: cluster.ActionUnchanged, Phase: "Sync", Wave: 1, Health: appspec.HealthHealthy}
	cmPruned   = cluster.ResourceResult{ResourceKey: oldCMKey, Action: cluster.ActionPruned, Phase: "Sync", Wave: 1}
)

// progressReplies are the operation polls of a sync, from before it
// starts to its last wave.
var progressReplies = []reply{
	answer(http.StatusOK, nil),
	answer(http.StatusOK, operation(workflows.PhasePending, nil, 0)),
	answer(http.StatusOK, operation(workflows.PhaseRunning, &cluster.Step{Phase: "PreSync", Resources: 1}, 0)),
	answer(http.StatusOK, operation(workflows.PhaseRunning, &cluster.Step{Phase: "Sync", Resources: 2}, 1, hookDone)),
	answer(http.StatusOK, operation(workflows.PhaseRunning, &cluster.Step{Phase: "Sync", Resources: 2}, 1, hookDone, deployDone)),
	answer(http.StatusOK, func() *workflows.Operation {
		op := operation(workflows.PhaseRunning, &cluster.Step{Phase: "Sync", Wave: 1, Resources: 1}, 2, hookDone, deployDone)
		op.AwaitingApproval = []appspec.ResourceKey{oldCMKey}
		return op
	}()),
}

func syncResult(phase, msg string, failed *appspec.ResourceKey) workflows.SyncResult {
	return workflows.SyncResult{
		SyncSummary: workflows.SyncSummary{
			ID: "sync/default/web/4", Revision: "main", SHA: "1a2b3c4d5e6f7081", Prune: true, Phase: phase, Message: msg,
			Initiator: "api", StartedAt: t0, FinishedAt: t0.Add(42 * time.Second),
		},
		Resources: []cluster.ResourceResult{hookDone, deployDone, svcDone, cmPruned},
		Health:    appspec.HealthHealthy,
		Failed:    failed,
	}
}

const (
	webPath = appsPath + "/web"
	opPath  = webPath + "/operation"
)

// appsFile is an app-of-apps output: several Argo CD and Windlass
// applications, one of them invalid, one in a missing project.
const appsFile = `# rendered by the apps chart
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: example.guestbook
spec:
  source: {repoURL: https://github.com/argoproj/argocd-example-apps.git, path: guestbook}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: example..bad
---
name: example.helm-guestbook
project: team-a
--- {name: ghost, project: nowhere}
...
---
# no document here
---
name: kustomize
`

// appsFileRequests are the POSTs of appsFile's documents, in order, with
// the query q.
func appsFileRequests(q string) []string {
	var out []string
	for _, d := range appspec.Documents([]byte(appsFile)) {
		out = append(out, "POST /api/v1/applications?"+q+" "+string(d))
	}
	return out
}

// staleReply is r marked as the API marks the last known answer it serves
// while the workflow engine does not answer.
func staleReply(r reply) reply {
	r.header = http.Header{"Warning": {`110 - "the workflow engine is unavailable since 2026-11-27T14:00:00Z; status as of 2026-11-27T13:59:30Z"`}}
	return r
}

// savedApp is the answer of a POST that saved project/name.
func savedApp(project, name string) workflows.AppView {
	return workflows.AppView{Spec: appspec.Application{Name: name, Project: project}}
}

func TestCLIApp(t *testing.T) {
	running := operation(workflows.PhaseRunning, &cluster.Step{Phase: "Sync", Resources: 2}, 1, hookDone)
	appRows := []map[string]string{
		{"name": "web", "project": "default", "sync": "Synced", "health": "Healthy", "revision": "1a2b3c4d5e6f", "cluster": "in-cluster", "namespace": "web", "repo": "https://github.com/acme/deploy.git"},
		{"name": "api", "project": "team-a", "sync": "OutOfSync", "health": "Degraded", "revision": "v1.2.0", "cluster": "prod", "namespace": "api", "repo": "https://github.com/acme/api.git"},
	}
	failedDeploy := deployKey
	runCases(t, []cliCase{
		{
			name: "app list pages",
			args: "app list",
			routes: map[string][]reply{"GET " + appsPath: {
				answer(200, map[string]any{"items": appRows[:1], "next": "c2"}),
				answer(200, map[string]any{"items": appRows[1:]}),
			}},
			want: []string{"GET /api/v1/applications", "GET /api/v1/applications?cursor=c2"},
		},
		{
			name: "app list stale pages warn once",
			args: "app list",
			routes: map[string][]reply{"GET " + appsPath: {
				staleReply(answer(200, map[string]any{"items": appRows[:1], "next": "c2"})),
				staleReply(answer(200, map[string]any{"items": appRows[1:]})),
			}},
			want: []string{"GET /api/v1/applications", "GET /api/v1/applications?cursor=c2"},
		},
		{
			name:   "app get stale",
			args:   "app get web",
			routes: map[string][]reply{"GET " + webPath: {staleReply(answer(200, webApp(appspec.SyncSynced, appspec.HealthHealthy, nil)))}},
			want:   []string{"GET /api/v1/applications/web"},
		},
		{
			name:   "app list filters json",
			args:   "app list --project team-a --health Degraded --sync OutOfSync --repo https://github.com/acme/api.git --cluster prod --search ap --sort name --limit 1 -o json",
			routes: map[string][]reply{"GET " + appsPath: {answer(200, map[string]any{"items": appRows[1:], "next": "c2"})}},
			want:   []string{"GET /api/v1/applications?cluster=prod&health=Degraded&limit=1&project=team-a&repo=https%3A%2F%2Fgithub.com%2Facme%2Fapi.git&search=ap&sort=name&sync=OutOfSync"},
		},
		{
			name: "app list label selector with labels shown",
			args: "app list -l team=payments,tier --show-labels",
			routes: map[string][]reply{"GET " + appsPath: {answer(200, map[string]any{"items": []map[string]any{
				{"name": "web", "project": "default", "sync": "Synced", "health": "Healthy", "labels": map[string]string{"team": "payments", "tier": "web"}},
			}})}},
			want: []string{"GET /api/v1/applications?selector=team%3Dpayments%2Ctier"},
		},
		{
			name:   "app list bad selector",
			args:   "app list --selector team=a,",
			routes: map[string][]reply{"GET " + appsPath: {problemReply(400, "selector: found '', expected: identifier after ','", "selector")}},
			want:   []string{"GET /api/v1/applications?selector=team%3Da%2C"},
			code:   cmdline.ExitError,
		},
		{
			name: "app get labels, annotations, skipped",
			args: "app get web",
			routes: map[string][]reply{"GET " + webPath: ok(func() workflows.AppView {
				v := webApp(appspec.SyncSynced, appspec.HealthHealthy, nil)
				v.Spec.Labels = map[string]string{"tier": "web", "team": "payments"}
				v.Spec.Annotations = map[string]string{appspec.AnnotationSkipReconcile: "true"}
				v.Status.ReconcileSkipped = true
				return v
			}())},
			want: []string{"GET /api/v1/applications/web"},
		},
		{
			name: "app get excluded resources",
			args: "app get web",
			routes: map[string][]reply{"GET " + webPath: ok(func() workflows.AppView {
				v := webApp(appspec.SyncSynced, appspec.HealthHealthy, nil)
				v.Status.Conditions = []appspec.Condition{{Type: appspec.ConditionExcludedResourceWarning,
					Message: "Secret web/creds is not applied: its kind is excluded by resource.exclusions or resource.inclusions"}}
				return v
			}())},
			want: []string{"GET /api/v1/applications/web"},
		},
		{
			name:   "app list yaml after the verb",
			args:   "app list -o yaml",
			routes: map[string][]reply{"GET " + appsPath: {answer(200, map[string]any{"items": appRows})}},
			want:   []string{"GET /api/v1/applications"},
		},
		{
			name:   "app get",
			args:   "app get web",
			routes: map[string][]reply{"GET " + webPath: ok(webApp(appspec.SyncOutOfSync, appspec.HealthProgressing, running))},
			want:   []string{"GET /api/v1/applications/web"},
		},
		{
			name: "app get waiting for dependencies",
			args: "app get web",
			routes: map[string][]reply{"GET " + webPath: ok(func() map[string]any {
				op := operation(workflows.PhasePending, nil, 0)
				op.WaitingFor = []depends.Waiting{
					{App: appspec.DependencyRef{Project: "default", Name: "db"}, Reason: "is Synced and Progressing; waits for Synced and Healthy"},
					{App: appspec.DependencyRef{Project: "infra", Name: "net"}, Reason: "does not exist"},
				}
				v := webApp(appspec.SyncOutOfSync, appspec.HealthMissing, op)
				v.Spec.DependsOn = []string{"db", "infra/net"}
				return map[string]any{"spec": v.Spec, "status": v.Status, "dependents": []string{"default/api", "team-a/front"}}
			}())},
			want: []string{"GET /api/v1/applications/web"},
		},
		{
			name:   "app get json with project",
			args:   "app get -o json web --project team-a",
			routes: map[string][]reply{"GET " + webPath: ok(webApp(appspec.SyncSynced, appspec.HealthHealthy, nil))},
			want:   []string{"GET /api/v1/applications/web?project=team-a"},
		},
		{
			name:   "app get not found",
			args:   "app get web",
			routes: map[string][]reply{"GET " + webPath: {problemReply(404, "application not found", "")}},
			want:   []string{"GET /api/v1/applications/web"},
			code:   cmdline.ExitNotFound,
		},
		{
			name:   "app get unauthenticated",
			args:   "app get web",
			routes: map[string][]reply{"GET " + webPath: {problemReply(401, "authentication required", "")}},
			want:   []string{"GET /api/v1/applications/web"},
			code:   cmdline.ExitUnauthorized,
		},
		{
			name:   "app get forbidden",
			args:   "app get web",
			routes: map[string][]reply{"GET " + webPath: {problemReply(403, "admin may not get applications/default/web", "")}},
			want:   []string{"GET /api/v1/applications/web"},
			code:   cmdline.ExitUnauthorized,
		},
		{
			name:   "app get not a problem",
			args:   "app get web",
			routes: map[string][]reply{"GET " + webPath: {{status: 502, body: "<html>bad gateway</html>"}}},
			want:   []string{"GET /api/v1/applications/web"},
			code:   cmdline.ExitError,
		},
		{name: "app get without name", args: "app get", code: cmdline.ExitUsage},
		{name: "app get bad output", args: "app get web -o xml", code: cmdline.ExitUsage},
		{name: "app unknown verb", args: "app frob web", code: cmdline.ExitUsage},
		{name: "app no verb", args: "app", code: cmdline.ExitUsage},
		{name: "app help", args: "app -h"},
		{name: "app sync help", args: "app sync -h"},
		{
			name:   "app create yaml upsert",
			args:   "app create -f $DIR/web.yaml --upsert",
			files:  map[string]string{"web.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web}\n"},
			routes: map[string][]reply{"POST " + appsPath: {answer(200, webApp(appspec.SyncUnknown, appspec.HealthUnknown, nil))}},
			want:   []string{"POST /api/v1/applications?upsert=true apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web}\n"},
		},
		{
			name:  "app create with warnings",
			args:  "app create -f $DIR/web.yaml",
			files: map[string]string{"web.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web}\n"},
			routes: map[string][]reply{"POST " + appsPath: {func() reply {
				r := answer(201, webApp(appspec.SyncUnknown, appspec.HealthUnknown, nil))
				r.header = http.Header{"Warning": {`299 - "spec.source.kustomize.version: ignored: in-process Kustomize"`, "not quoted"}}
				return r
			}()}},
			want: []string{"POST /api/v1/applications apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web}\n"},
		},
		{
			name:   "app create json",
			args:   "app create -f $DIR/web.json -o json",
			files:  map[string]string{"web.json": `{"name":"web"}`},
			routes: map[string][]reply{"POST " + appsPath: {answer(201, webApp(appspec.SyncUnknown, appspec.HealthUnknown, nil))}},
			want:   []string{`POST /api/v1/applications {"name":"web"}`},
		},
		{
			name:   "app create invalid",
			args:   "app create -f $DIR/web.json",
			files:  map[string]string{"web.json": `{"name":"web"}`},
			routes: map[string][]reply{"POST " + appsPath: {problemReply(400, "destination.namespace is required", "destination.namespace")}},
			want:   []string{`POST /api/v1/applications {"name":"web"}`},
			code:   cmdline.ExitError,
		},
		{
			name:   "app create exists",
			args:   "app create -f $DIR/web.json",
			files:  map[string]string{"web.json": `{"name":"web"}`},
			routes: map[string][]reply{"POST " + appsPath: {problemReply(409, "application default/web already exists (use PUT, or ?upsert=true)", "")}},
			want:   []string{`POST /api/v1/applications {"name":"web"}`},
			code:   cmdline.ExitFailed,
		},
		{name: "app create without file", args: "app create", code: cmdline.ExitUsage},
		{
			name:  "app create several documents",
			args:  "app create -f $DIR/apps.yaml --upsert",
			files: map[string]string{"apps.yaml": appsFile},
			routes: map[string][]reply{"POST " + appsPath: {
				answer(201, savedApp("default", "example.guestbook")),
				problemReply(400, "name: must be a DNS subdomain", "metadata.name"),
				answer(200, savedApp("team-a", "example.helm-guestbook")),
				problemReply(403, "project nowhere does not exist", "project"),
				answer(201, savedApp("default", "kustomize")),
			}},
			want: appsFileRequests("upsert=true"),
			code: cmdline.ExitError,
		},
		{
			name:  "app create several documents json",
			args:  "app create -f - -o json",
			stdin: "name: a.b\n---\nname: c.d\n",
			routes: map[string][]reply{"POST " + appsPath: {
				answer(201, savedApp("default", "a.b")),
				answer(201, savedApp("default", "c.d")),
			}},
			want: []string{"POST /api/v1/applications name: a.b\n", "POST /api/v1/applications ---\nname: c.d\n"},
		},
		{
			name:   "app create several documents all fail",
			args:   "app create -f - -o yaml",
			stdin:  "name: a\n---\nname: b\n",
			routes: map[string][]reply{"POST " + appsPath: {problemReply(409, "application default/a already exists", "")}},
			want:   []string{"POST /api/v1/applications name: a\n", "POST /api/v1/applications ---\nname: b\n"},
			code:   cmdline.ExitError,
		},
		{
			name:   "app create one document after a separator",
			args:   "app create -f $DIR/web.yaml",
			files:  map[string]string{"web.yaml": "# the app\n---\nname: example.web\n---\n"},
			routes: map[string][]reply{"POST " + appsPath: {answer(201, savedApp("default", "example.web"))}},
			want:   []string{"POST /api/v1/applications # the app\n---\nname: example.web\n---\n"},
		},
		{
			name:   "app get dotted name",
			args:   "app get example.guestbook -o json",
			routes: map[string][]reply{"GET " + appsPath + "/example.guestbook": ok(savedApp("default", "example.guestbook"))},
			want:   []string{"GET /api/v1/applications/example.guestbook"},
		},
		{
			name:   "app set",
			args:   "app set web --revision v2 --path guestbook --dest-namespace web2 --sync-policy automated --self-heal --sync-option CreateNamespace=true --sync-option PruneLast=true --refresh-seconds 60",
			routes: map[string][]reply{"PATCH " + webPath: ok(webApp(appspec.SyncOutOfSync, appspec.HealthHealthy, nil))},
			want: []string{`PATCH /api/v1/applications/web {"destination":{"namespace":"web2"},"refreshSeconds":60,` +
				`"source":{"path":"guestbook","targetRevision":"v2"},"syncPolicy":{"automated":{"selfHeal":true},"syncOptions":["CreateNamespace=true","PruneLast=true"]}}`},
		},
		{
			name: "app set manual",
			args: "app set web --sync-policy none --project team-a",
			routes: map[string][]reply{"GET " + appsPath: ok(map[string]any{"items": []map[string]any{{"name": "web", "project": "team-a"}, {"name": "web", "project": "default"}}}),
				"PATCH " + webPath: ok(webApp(appspec.SyncOutOfSync, appspec.HealthHealthy, nil))},
			want: []string{"GET /api/v1/applications?search=web", `PATCH /api/v1/applications/web?project=team-a {"syncPolicy":{"automated":null}}`},
		},
		{
			name: "app set project moves",
			args: "app set web --project team-a",
			routes: map[string][]reply{"GET " + appsPath: ok(map[string]any{"items": []map[string]any{{"name": "web-2", "project": "team-b"}, {"name": "web", "project": "default"}}}),
				"PATCH " + webPath: ok(webApp(appspec.SyncOutOfSync, appspec.HealthHealthy, nil))},
			want: []string{"GET /api/v1/applications?search=web", `PATCH /api/v1/applications/web?project=default {"project":"team-a"}`},
		},
		{
			name:   "app set project of PROJECT/NAME",
			args:   "app set team-b/web --project team-a --revision v3",
			routes: map[string][]reply{"PATCH " + webPath: ok(webApp(appspec.SyncOutOfSync, appspec.HealthHealthy, nil))},
			want:   []string{`PATCH /api/v1/applications/web?project=team-b {"project":"team-a","source":{"targetRevision":"v3"}}`},
		},
		{
			name:   "app set project of a name in two projects",
			args:   "app set web --project team-a",
			routes: map[string][]reply{"GET " + appsPath: ok(map[string]any{"items": []map[string]any{{"name": "web", "project": "team-b"}, {"name": "web", "project": "default"}}})},
			want:   []string{"GET /api/v1/applications?search=web"},
			code:   cmdline.ExitUsage,
		},
		{
			name: "app set project refused",
			args: "app set web --project locked",
			routes: map[string][]reply{"GET " + appsPath: ok(map[string]any{"items": []map[string]any{{"name": "web", "project": "default"}}}),
				"PATCH " + webPath: {problemReply(403, "application destination namespace web is not permitted in project locked", "destination")}},
			want: []string{"GET /api/v1/applications?search=web", `PATCH /api/v1/applications/web?project=default {"project":"locked"}`},
			code: cmdline.ExitUnauthorized,
		},
		{
			name:   "app set depends-on",
			args:   "app set web --depends-on db,infra/net",
			routes: map[string][]reply{"PATCH " + webPath: ok(webApp(appspec.SyncOutOfSync, appspec.HealthHealthy, nil))},
			want:   []string{`PATCH /api/v1/applications/web {"dependsOn":["db","infra/net"]}`},
		},
		{
			name:   "app set depends-on cleared",
			args:   "app set web --depends-on=",
			routes: map[string][]reply{"PATCH " + webPath: ok(webApp(appspec.SyncOutOfSync, appspec.HealthHealthy, nil))},
			want:   []string{`PATCH /api/v1/applications/web {"dependsOn":null}`},
		},
		{
			name:   "app set depends-on cycle",
			args:   "app set web --depends-on db",
			routes: map[string][]reply{"PATCH " + webPath: {problemReply(400, "dependsOn: cycle: web -> db -> web", "dependsOn")}},
			want:   []string{`PATCH /api/v1/applications/web {"dependsOn":["db"]}`},
			code:   cmdline.ExitError,
		},
		{
			name: "app set source position",
			args: "app set web --source-position 2 --revision v3",
			routes: map[string][]reply{
				"GET " + webPath: ok(func() workflows.AppView {
					v := webApp(appspec.SyncSynced, appspec.HealthHealthy, nil)
					v.Spec.Source = appspec.Source{}
					v.Spec.Sources = []appspec.Source{{RepoURL: "https://charts.acme.io", Chart: "web", TargetRevision: "1.0.0"}, {RepoURL: "https://github.com/acme/values.git", Ref: "values"}}
					return v
				}()),
				"PATCH " + webPath: ok(webApp(appspec.SyncOutOfSync, appspec.HealthHealthy, nil)),
			},
			want: []string{"GET /api/v1/applications/web",
				`PATCH /api/v1/applications/web {"sources":[{"chart":"web","repoURL":"https://charts.acme.io","targetRevision":"1.0.0"},{"ref":"values","repoURL":"https://github.com/acme/values.git","targetRevision":"v3"}]}`},
		},
		{name: "app set nothing", args: "app set web", code: cmdline.ExitUsage},
		{name: "app set bad policy", args: "app set web --sync-policy sometimes", code: cmdline.ExitUsage},
		{
			name: "app delete orphan",
			args: "app delete web -y --cascade orphan",
			routes: map[string][]reply{"DELETE " + webPath: ok(workflows.DeleteResult{Resources: []cluster.ResourceResult{
				{ResourceKey: deployKey, Action: cluster.ActionOrphaned}, {ResourceKey: svcKey, Action: cluster.ActionOrphaned},
			}})},
			want: []string{"DELETE /api/v1/applications/web?cascade=orphan"},
		},
		{
			name:   "app delete confirmed awaiting approval",
			args:   "app delete web",
			stdin:  "y\n",
			routes: map[string][]reply{"DELETE " + webPath: {answer(202, workflows.DeleteResult{AwaitingApproval: []appspec.ResourceKey{oldCMKey}})}},
			want:   []string{"DELETE /api/v1/applications/web"},
		},
		{name: "app delete not confirmed", args: "app delete web", stdin: "n\n", code: cmdline.ExitError},
		{name: "app delete bad cascade", args: "app delete web -y --cascade sideways", code: cmdline.ExitUsage},
		{
			name: "app sync progress",
			args: "app sync web --prune --revision main --resource apps:Deployment:web/web --resource :Service:web --sync-option ServerSideApply=true --strategy apply",
			routes: map[string][]reply{
				"GET " + opPath:             progressReplies,
				"POST " + webPath + "/sync": {{status: 200, body: answer(200, syncResult(workflows.PhaseSucceeded, "successfully synced", nil)).body, after: "GET " + opPath}},
			},
			want: []string{"GET /api/v1/applications/web/operation",
				`POST /api/v1/applications/web/sync {"revision":"main","prune":true,"resources":[{"group":"apps","kind":"Deployment","namespace":"web","name":"web"},{"kind":"Service","name":"web"}],"syncOptions":["ServerSideApply=true"],"strategy":"apply"}`},
		},
		{
			name: "app sync progress on a terminal",
			args: "app sync web",
			tty:  true,
			routes: map[string][]reply{
				"GET " + opPath:             progressReplies,
				"POST " + webPath + "/sync": {{status: 200, body: answer(200, syncResult(workflows.PhaseSucceeded, "", nil)).body, after: "GET " + opPath}},
			},
			want: []string{"GET /api/v1/applications/web/operation", `POST /api/v1/applications/web/sync {}`},
		},
		{
			name: "app sync json",
			args: "app sync web -o json --dry-run",
			routes: map[string][]reply{
				"GET " + opPath:             progressReplies[:1],
				"POST " + webPath + "/sync": {{status: 200, body: answer(200, syncResult(workflows.PhaseSucceeded, "", nil)).body, after: "GET " + opPath}},
			},
			want: []string{"GET /api/v1/applications/web/operation", `POST /api/v1/applications/web/sync {"dryRun":true}`},
		},
		{
			name: "app sync failed",
			args: "app sync web",
			routes: map[string][]reply{
				"GET " + opPath:             progressReplies[:1],
				"POST " + webPath + "/sync": {{status: 409, body: answer(409, syncResult(workflows.PhaseFailed, "Sync wave 0: deployment web: progress deadline exceeded", &failedDeploy)).body, after: "GET " + opPath}},
			},
			want: []string{"GET /api/v1/applications/web/operation", `POST /api/v1/applications/web/sync {}`},
			code: cmdline.ExitFailed,
		},
		{
			name: "app sync conflict",
			args: "app sync web",
			routes: map[string][]reply{
				"GET " + opPath:             ok(running),
				"POST " + webPath + "/sync": {problemReply(409, "an operation is in progress: sync/default/web/3", "")},
			},
			want: []string{"GET /api/v1/applications/web/operation", `POST /api/v1/applications/web/sync {}`},
			code: cmdline.ExitFailed,
		},
		{
			name: "app sync timeout",
			args: "app sync web --timeout 300ms",
			routes: map[string][]reply{
				"GET " + opPath:             ok(running),
				"POST " + webPath + "/sync": {{block: true}},
			},
			want: []string{"GET /api/v1/applications/web/operation", `POST /api/v1/applications/web/sync {}`},
			code: cmdline.ExitTimeout,
		},
		{
			name:   "app sync async",
			args:   "app sync web --async --project team-a",
			routes: map[string][]reply{"POST " + webPath + "/sync": {answer(202, workflows.SyncAccepted{ID: "sync/team-a/web/5"})}},
			want:   []string{`POST /api/v1/applications/web/sync?project=team-a&wait=false {}`},
		},
		{name: "app sync bad resource", args: "app sync web --resource Deployment/web", code: cmdline.ExitUsage},
		{
			name: "app rollback number",
			args: "app rollback web 3 --prune",
			routes: map[string][]reply{
				// The API answers an idle operation query with a zero operation.
				"GET " + opPath:                 ok(workflows.Operation{}),
				"POST " + webPath + "/rollback": {{status: 200, body: answer(200, syncResult(workflows.PhaseSucceeded, "", nil)).body, after: "GET " + opPath}},
			},
			want: []string{"GET /api/v1/applications/web/operation", `POST /api/v1/applications/web/rollback {"id":"sync/default/web/3","prune":true}`},
		},
		{
			name:   "app rollback id async",
			args:   "app rollback --project team-a web sync/team-a/web/2 --force --dry-run --async",
			routes: map[string][]reply{"POST " + webPath + "/rollback": {answer(202, workflows.SyncAccepted{ID: "sync/team-a/web/6"})}},
			want:   []string{`POST /api/v1/applications/web/rollback?project=team-a&wait=false {"id":"sync/team-a/web/2","force":true,"dryRun":true}`},
		},
		{name: "app rollback without id", args: "app rollback web", code: cmdline.ExitUsage},
		{
			name: "app diff",
			args: "app diff web",
			routes: map[string][]reply{"GET " + webPath + "/diff": ok(map[string]any{"resources": []map[string]any{
				{"group": "apps", "kind": "Deployment", "namespace": "web", "name": "web", "status": "OutOfSync",
					"diff": "--- live\n+++ desired\n@@ -3 +3 @@\n-  replicas: 1\n+  replicas: 2\n"},
				{"kind": "Service", "namespace": "web", "name": "web", "status": "Synced", "diff": ""},
				{"kind": "ConfigMap", "namespace": "web", "name": "old", "status": "OutOfSync", "diff": "--- live\n+++ desired\n@@ -1,2 +0,0 @@\n-data:\n-  a: b"},
			}})},
			want: []string{"GET /api/v1/applications/web/diff"},
			code: exitDiffFound,
		},
		{
			name: "app diff none",
			args: "app diff web",
			routes: map[string][]reply{"GET " + webPath + "/diff": ok(map[string]any{"resources": []map[string]any{
				{"kind": "Service", "namespace": "web", "name": "web", "status": "Synced", "diff": ""},
			}})},
			want: []string{"GET /api/v1/applications/web/diff"},
		},
		{
			name: "app diff json",
			args: "app diff web -o json",
			routes: map[string][]reply{"GET " + webPath + "/diff": ok(map[string]any{"resources": []map[string]any{
				{"kind": "ConfigMap", "namespace": "web", "name": "old", "status": "OutOfSync", "diff": "--- live\n+++ desired\n@@ -1 +0,0 @@\n-data: {}\n"},
			}})},
			want: []string{"GET /api/v1/applications/web/diff"},
			code: exitDiffFound,
		},
		{
			name:   "app diff not found",
			args:   "app diff web",
			routes: map[string][]reply{"GET " + webPath + "/diff": {problemReply(404, "application not found", "")}},
			want:   []string{"GET /api/v1/applications/web/diff"},
			code:   exitDiffError,
		},
		{
			name:   "app diff forbidden",
			args:   "app diff web",
			routes: map[string][]reply{"GET " + webPath + "/diff": {problemReply(403, "admin may not get applications/default/web", "")}},
			want:   []string{"GET /api/v1/applications/web/diff"},
			code:   exitDiffError,
		},
		{name: "app diff without name", args: "app diff", code: exitDiffError},
		{name: "app diff help", args: "app diff -h"},
		{
			name: "app history",
			args: "app history web",
			routes: map[string][]reply{"GET " + webPath + "/history": ok(workflows.HistoryView{Recent: []workflows.SyncSummary{
				syncResult(workflows.PhaseFailed, "wave 0 failed", nil).SyncSummary,
				{ID: "sync/default/web/3", Revision: "v1", SHA: "9f8e7d6c5b4a", Phase: workflows.PhaseSucceeded, Initiator: "automated", StartedAt: t0.Add(-time.Hour), FinishedAt: t0.Add(-59 * time.Minute)},
			}})},
			want: []string{"GET /api/v1/applications/web/history"},
		},
		{
			name: "app history all",
			args: "app history web --all",
			routes: map[string][]reply{"GET " + webPath + "/syncs": {
				answer(200, map[string]any{"items": []map[string]any{{"id": "sync/default/web/4", "status": "Running", "started": t0, "source": "retained", "revision": "main", "sha": "9f8e7d6c5b4a", "temporalURL": "http://temporal/wf/4"}}, "next": "p2"}),
				answer(200, map[string]any{"items": []map[string]any{{"id": "sync/default/web/3", "status": "Completed", "started": t0.Add(-time.Hour), "finished": t0.Add(-59 * time.Minute), "source": "archived", "revision": "v1", "sha": "1a2b3c4d5e6f"}}}),
			}},
			want: []string{"GET /api/v1/applications/web/syncs", "GET /api/v1/applications/web/syncs?cursor=p2"},
		},
		{
			name: "app wait health and sync",
			args: "app wait web --health --sync --timeout 1m",
			routes: map[string][]reply{"GET " + webPath: {
				answer(200, webApp(appspec.SyncOutOfSync, appspec.HealthProgressing, running)),
				answer(200, webApp(appspec.SyncOutOfSync, appspec.HealthProgressing, running)),
				answer(200, webApp(appspec.SyncSynced, appspec.HealthProgressing, nil)),
				answer(200, webApp(appspec.SyncSynced, appspec.HealthHealthy, nil)),
			}},
			want: []string{"GET /api/v1/applications/web"},
		},
		{
			name:   "app wait operation",
			args:   "app wait web --operation",
			routes: map[string][]reply{"GET " + webPath: {answer(200, webApp(appspec.SyncOutOfSync, appspec.HealthProgressing, running)), answer(200, webApp(appspec.SyncOutOfSync, appspec.HealthDegraded, nil))}},
			want:   []string{"GET /api/v1/applications/web"},
		},
		{
			name:   "app wait timeout",
			args:   "app wait web --timeout 200ms",
			routes: map[string][]reply{"GET " + webPath: ok(webApp(appspec.SyncOutOfSync, appspec.HealthProgressing, nil))},
			want:   []string{"GET /api/v1/applications/web"},
			code:   cmdline.ExitTimeout,
		},
		{
			name:   "app wait not found",
			args:   "app wait web",
			routes: map[string][]reply{"GET " + webPath: {problemReply(404, "application not found", "")}},
			want:   []string{"GET /api/v1/applications/web"},
			code:   cmdline.ExitNotFound,
		},
		{
			name: "app manifests",
			args: "app manifests web",
			routes: map[string][]reply{"GET " + webPath + "/manifests": ok(map[string]any{"manifests": []map[string]any{
				{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "web", "namespace": "web"}, "spec": map[string]any{"ports": []map[string]any{{"port": 80}}}},
				{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "web"}, "spec": map[string]any{"replicas": 2}},
			}})},
			want: []string{"GET /api/v1/applications/web/manifests"},
		},
		{
			name:   "app resources",
			args:   "app resources web",
			routes: map[string][]reply{"GET " + webPath + "/resources": ok(webApp(appspec.SyncOutOfSync, appspec.HealthProgressing, nil).Status.Resources)},
			want:   []string{"GET /api/v1/applications/web/resources"},
		},
		{
			name:   "app resources yaml",
			args:   "app resources web -o yaml",
			routes: map[string][]reply{"GET " + webPath + "/resources": ok(webApp(appspec.SyncOutOfSync, appspec.HealthProgressing, nil).Status.Resources)},
			want:   []string{"GET /api/v1/applications/web/resources"},
		},
		{
			name:   "app refresh hard",
			args:   "app refresh web --hard",
			routes: map[string][]reply{"POST " + webPath + "/refresh": {{status: 202}}},
			want:   []string{"POST /api/v1/applications/web/refresh?hard=true"},
		},
		{
			name:   "app terminate-op",
			args:   "app terminate-op web --project team-a",
			routes: map[string][]reply{"POST " + webPath + "/terminate": {{status: 202}}},
			want:   []string{"POST /api/v1/applications/web/terminate?project=team-a"},
		},
		{
			name:   "app terminate-op nothing running",
			args:   "app terminate-op web",
			routes: map[string][]reply{"POST " + webPath + "/terminate": {problemReply(409, "no operation is running", "")}},
			want:   []string{"POST /api/v1/applications/web/terminate"},
			code:   cmdline.ExitFailed,
		},
		{
			name:   "app confirm-deletion",
			args:   "app confirm-deletion web",
			routes: map[string][]reply{"POST " + webPath + "/confirm-deletion": ok(map[string]any{"resources": []appspec.ResourceKey{oldCMKey}})},
			want:   []string{"POST /api/v1/applications/web/confirm-deletion"},
		},
		{
			name:   "app name is escaped",
			args:   "app get a?b",
			routes: map[string][]reply{"GET " + appsPath + "/a%3Fb": {problemReply(400, "application name is not valid", "name")}},
			want:   []string{"GET /api/v1/applications/a%3Fb"},
			code:   cmdline.ExitError,
		},
	})
}
