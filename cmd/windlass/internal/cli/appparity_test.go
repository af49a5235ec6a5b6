package cli

import (
	"testing"

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
