package cli

import (
	"testing"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
	"github.com/windlass-cd/windlass/internal/actions"
)

func TestActionsCommands(t *testing.T) {
	actionsPath := webPath + "/resource/actions"
	listed := map[string]any{"resource": deployKey, "actions": []actions.Action{
		{Name: "pause", Source: actions.SourceBuiltin},
		{Name: "restart", Source: actions.SourceLua},
		{Name: "resume", Disabled: true, Source: actions.SourceBuiltin},
		{Name: "scale", Source: actions.SourceBuiltin, Params: []actions.Param{{Name: "replicas", Type: "number", Default: "2"}}},
	}}
	ran := map[string]any{"resource": deployKey, "action": "scale", "changes": []cluster.ActionChange{{Operation: "patch", Resource: deployKey}}}
	runCases(t, []cliCase{
		{
			name:   "app actions list",
			args:   "app actions list web --kind Deployment --group apps --resource-name web --namespace web",
			routes: map[string][]reply{"GET " + actionsPath: ok(listed)},
			want:   []string{"GET /api/v1/applications/web/resource/actions?group=apps&kind=Deployment&name=web&namespace=web"},
		},
		{
			name:   "app actions list json",
			args:   "app actions list web --kind Deployment --group apps --resource-name web -o json",
			routes: map[string][]reply{"GET " + actionsPath: ok(listed)},
			want:   []string{"GET /api/v1/applications/web/resource/actions?group=apps&kind=Deployment&name=web"},
		},
		{
			name:   "app actions list none",
			args:   "app actions list web --kind ConfigMap --resource-name settings --namespace web",
			routes: map[string][]reply{"GET " + actionsPath: ok(map[string]any{"resource": deployKey, "actions": []actions.Action{}})},
			want:   []string{"GET /api/v1/applications/web/resource/actions?kind=ConfigMap&name=settings&namespace=web"},
		},
		{name: "app actions list without kind", args: "app actions list web --resource-name web", code: cmdline.ExitUsage},
		{
			name:   "app actions run",
			args:   "app actions run web scale --kind Deployment --group apps --resource-name web --namespace web --param replicas=3 --project team-a",
			routes: map[string][]reply{"POST " + actionsPath: ok(ran)},
			want: []string{`POST /api/v1/applications/web/resource/actions?group=apps&kind=Deployment&name=web&namespace=web&project=team-a ` +
				`{"action":"scale","params":{"replicas":"3"}}`},
		},
		{
			name:   "app actions run unknown",
			args:   "app actions run web explode --kind Deployment --group apps --resource-name web",
			routes: map[string][]reply{"POST " + actionsPath: {problemReply(404, `apps/Deployment has no action "explode"`, "")}},
			want:   []string{`POST /api/v1/applications/web/resource/actions?group=apps&kind=Deployment&name=web {"action":"explode"}`},
			code:   cmdline.ExitNotFound,
		},
		{
			name:   "app actions run forbidden",
			args:   "app actions run web restart --kind Deployment --group apps --resource-name web",
			routes: map[string][]reply{"POST " + actionsPath: {problemReply(403, "permission denied: applications, action/apps/Deployment/restart, default/web", "")}},
			want:   []string{`POST /api/v1/applications/web/resource/actions?group=apps&kind=Deployment&name=web {"action":"restart"}`},
			code:   cmdline.ExitUnauthorized,
		},
		{name: "app actions run bad param", args: "app actions run web scale --kind Deployment --resource-name web --param replicas", code: cmdline.ExitUsage},
		{name: "app actions run without action", args: "app actions run web --kind Deployment --resource-name web", code: cmdline.ExitUsage},
		{name: "app actions no verb", args: "app actions", code: cmdline.ExitUsage},
	})
}
