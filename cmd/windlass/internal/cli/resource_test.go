package cli

import (
	"net/http"
	"testing"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
)

func TestCLIAppResource(t *testing.T) {
	const (
		logsPath = webPath + "/logs"
		resPath  = webPath + "/resource"
		depQuery = "group=apps&kind=Deployment&name=web&namespace=web"
	)
	deployment := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "web"},
		"spec":     map[string]any{"replicas": 2},
	}
	runCases(t, []cliCase{
		{
			name:   "app logs of a workload",
			args:   "app logs web --group apps --kind Deployment --namespace web --name web -f --tail 10 --since-seconds 60 --filter !healthz",
			routes: map[string][]reply{"GET " + logsPath: {{status: http.StatusOK, body: "web-7d4-abc: started\nweb-7d4-def: GET / 200\n"}}},
			want:   []string{"GET /api/v1/applications/web/logs?filter=%21healthz&follow=true&" + depQuery + "&sinceSeconds=60&tailLines=10"},
		},
		{
			name:   "app logs of a pod, previous",
			args:   "app logs web --namespace web --resource-name web-7d4-abc --container app --previous",
			routes: map[string][]reply{"GET " + logsPath: {{status: http.StatusOK, body: "crashed\n"}}},
			want:   []string{"GET /api/v1/applications/web/logs?container=app&kind=Pod&name=web-7d4-abc&namespace=web&previous=true"},
		},
		{
			name:   "app logs not the app's",
			args:   "app logs web --namespace kube-system --resource-name coredns",
			routes: map[string][]reply{"GET " + logsPath: {problemReply(http.StatusNotFound, "resource /Pod:kube-system/coredns is not one of the application's resources", "")}},
			want:   []string{"GET /api/v1/applications/web/logs?kind=Pod&name=coredns&namespace=kube-system"},
			code:   cmdline.ExitNotFound,
		},
		{
			name:   "app logs forbidden",
			args:   "app logs web --namespace web --resource-name web-1",
			routes: map[string][]reply{"GET " + logsPath: {problemReply(http.StatusForbidden, "permission denied: logs, get, default/web", "")}},
			want:   []string{"GET /api/v1/applications/web/logs?kind=Pod&name=web-1&namespace=web"},
			code:   cmdline.ExitUnauthorized,
		},
		{
			name:   "app logs of all the app's pods",
			args:   "app logs web --tail 1",
			routes: map[string][]reply{"GET " + logsPath: {{status: http.StatusOK, body: "web-7d4-abc: GET / 200\nworker-5f-xyz: done\n"}}},
			want:   []string{"GET /api/v1/applications/web/logs?tailLines=1"},
		},
		{name: "app logs with a namespace but no resource name", args: "app logs web --namespace web", code: cmdline.ExitUsage},
		{name: "app logs help", args: "app logs -h"},
		{
			name:   "app get-resource",
			args:   "app get-resource web --group apps --kind Deployment --namespace web --resource-name web",
			routes: map[string][]reply{"GET " + resPath: ok(deployment)},
			want:   []string{"GET /api/v1/applications/web/resource?" + depQuery},
		},
		{
			name:   "app get-resource json",
			args:   "app get-resource web --kind Namespace --resource-name web -o json --project team-a",
			routes: map[string][]reply{"GET " + resPath: ok(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "web"}})},
			want:   []string{"GET /api/v1/applications/web/resource?kind=Namespace&name=web&project=team-a"},
		},
		{name: "app get-resource without kind", args: "app get-resource web --resource-name web", code: cmdline.ExitUsage},
		{
			name:   "app patch-resource",
			args:   `app patch-resource web --group apps --kind Deployment --namespace web --resource-name web --patch {"spec":{"replicas":2}}`,
			routes: map[string][]reply{"PATCH " + resPath: ok(deployment)},
			want:   []string{`PATCH /api/v1/applications/web/resource?` + depQuery + `&patchType=merge {"spec":{"replicas":2}}`},
		},
		{
			name: "app patch-resource json patch, yaml",
			args: `app patch-resource web --group apps --kind Deployment --namespace web --resource-name web -o yaml ` +
				`--patch-type application/json-patch+json --patch [{"op":"replace","path":"/spec/replicas","value":2}]`,
			routes: map[string][]reply{"PATCH " + resPath: ok(deployment)},
			want: []string{`PATCH /api/v1/applications/web/resource?` + depQuery + `&patchType=application%2Fjson-patch%2Bjson ` +
				`[{"op":"replace","path":"/spec/replicas","value":2}]`},
		},
		{
			name: "app patch-resource refused",
			args: `app patch-resource web --group apps --kind Deployment --namespace web --resource-name web --patch {"spec":{"replicas":-1}}`,
			routes: map[string][]reply{"PATCH " + resPath: {problemReply(http.StatusUnprocessableEntity,
				`Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0`, "")}},
			want: []string{`PATCH /api/v1/applications/web/resource?` + depQuery + `&patchType=merge {"spec":{"replicas":-1}}`},
			code: cmdline.ExitError,
		},
		{name: "app patch-resource without patch", args: "app patch-resource web --kind Deployment --resource-name web", code: cmdline.ExitUsage},
		{
			name:   "app delete-resource force orphan",
			args:   "app delete-resource web --kind Pod --namespace web --resource-name web-1 --force --orphan",
			routes: map[string][]reply{"DELETE " + resPath: {{status: http.StatusNoContent}}},
			want:   []string{"DELETE /api/v1/applications/web/resource?force=true&kind=Pod&name=web-1&namespace=web&orphan=true"},
		},
		{
			name:   "app delete-resource forbidden",
			args:   "app delete-resource web --kind Pod --namespace web --resource-name web-1",
			routes: map[string][]reply{"DELETE " + resPath: {problemReply(http.StatusForbidden, "permission denied: applications, delete//Pod/web/web-1, default/web", "")}},
			want:   []string{"DELETE /api/v1/applications/web/resource?kind=Pod&name=web-1&namespace=web"},
			code:   cmdline.ExitUnauthorized,
		},
	})
}
