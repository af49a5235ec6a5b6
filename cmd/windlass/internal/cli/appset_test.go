package cli

import (
	"net/http"
	"testing"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
)

const appSetFile = `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: guestbook}
spec:
  generators:
  - list: {elements: [{cluster: dev}]}
  template:
    metadata: {name: '{{cluster}}-guestbook'}
    spec:
      project: default
      source: {repoURL: 'https://github.com/acme/apps.git', path: guestbook}
      destination: {name: '{{cluster}}', namespace: guestbook}
`

func TestCLIAppSet(t *testing.T) {
	preview := ok(map[string]any{"applications": []any{
		map[string]any{"generator": "spec.generators[0]", "element": 0, "application": map[string]any{
			"name": "dev-guestbook", "project": "default",
			"source":      map[string]any{"repoURL": "https://github.com/acme/apps.git", "path": "guestbook", "targetRevision": "HEAD"},
			"destination": map[string]any{"name": "dev", "namespace": "guestbook"}}},
		map[string]any{"generator": "spec.generators[0]", "element": 1, "application": map[string]any{
			"name": "prod-guestbook", "project": "default",
			"source":      map[string]any{"repoURL": "https://github.com/acme/apps.git", "path": "guestbook"},
			"destination": map[string]any{"server": "https://prod.example:6443", "namespace": "guestbook"}}},
	}})
	const route = "POST /api/v1/applicationsets/generate"
	runCases(t, []cliCase{
		{
			name:   "appset generate",
			args:   "appset generate -f $DIR/set.yaml",
			files:  map[string]string{"set.yaml": appSetFile},
			routes: map[string][]reply{route: preview},
			want:   []string{route + " " + appSetFile},
		},
		{
			name:   "appset generate json",
			args:   "appset generate -f $DIR/set.yaml -o json",
			files:  map[string]string{"set.yaml": appSetFile},
			routes: map[string][]reply{route: preview},
			want:   []string{route + " " + appSetFile},
		},
		{
			name:   "appset generate duplicate",
			args:   "appset generate -f $DIR/set.yaml",
			files:  map[string]string{"set.yaml": appSetFile},
			routes: map[string][]reply{route: {problemReply(http.StatusUnprocessableEntity, "duplicate application: two elements yield app default/a", "")}},
			want:   []string{route + " " + appSetFile},
			code:   cmdline.ExitError,
		},
		{name: "appset generate without file", args: "appset generate", code: cmdline.ExitUsage},
	})
}

func TestCLIAppSetCRUD(t *testing.T) {
	detail := map[string]any{
		"set": map[string]any{"metadata": map[string]any{"name": "guestbook"}, "spec": map[string]any{"syncPolicy": map[string]any{"applicationsSync": "create-only"}}},
		"status": map[string]any{"apps": []any{"default/dev-guestbook"}, "generated": 1, "passes": 3,
			"lastEvaluatedAt": "2026-01-02T03:04:05Z", "lastReason": "requeue"},
		"applications": []any{map[string]any{"project": "default", "name": "dev-guestbook", "sync": "Synced", "health": "Healthy"}},
	}
	rolling := map[string]any{
		"set": map[string]any{"metadata": map[string]any{"name": "web"}, "spec": map[string]any{}},
		"status": map[string]any{"apps": []any{"default/dev", "default/prod"}, "generated": 2, "passes": 4,
			"rollout": map[string]any{"id": "appset/web/rollout", "target": "g1-0a1b2c3d4e5f", "started": 2}},
		"applications": []any{
			map[string]any{"project": "default", "name": "dev", "sync": "Synced", "health": "Degraded"},
			map[string]any{"project": "default", "name": "prod", "sync": "OutOfSync", "health": "Healthy"}},
		"rollout": map[string]any{"set": "web", "target": "g1-0a1b2c3d4e5f", "phase": "Halted", "step": 0, "haltedBy": "default/dev",
			"message": "halted at step 1: default/dev: is Degraded after sync sync/default/dev/3",
			"steps": []any{
				map[string]any{"phase": "Halted", "maxUpdate": 1, "apps": []any{map[string]any{"project": "default", "name": "dev", "phase": "Failed", "syncID": "sync/default/dev/3", "attempt": 1, "message": "is Degraded after sync sync/default/dev/3"}}},
				map[string]any{"phase": "Waiting", "maxUpdate": 1, "apps": []any{map[string]any{"project": "default", "name": "prod", "phase": "Waiting"}}}}},
	}
	failing := map[string]any{
		"set":          map[string]any{"metadata": map[string]any{"name": "bad"}, "spec": map[string]any{}},
		"status":       map[string]any{"apps": []any{}, "generated": 0, "passes": 1, "error": "duplicate application: two elements yield app default/a", "errorKind": "DuplicateApplication"},
		"applications": []any{},
	}
	runCases(t, []cliCase{
		{
			name:   "appset create",
			args:   "appset create -f $DIR/set.yaml --upsert",
			files:  map[string]string{"set.yaml": appSetFile},
			routes: map[string][]reply{"POST /api/v1/applicationsets": {answer(http.StatusCreated, detail)}},
			want:   []string{"POST /api/v1/applicationsets?upsert=true " + appSetFile},
		},
		{
			name:   "appset create exists",
			args:   "appset create -f $DIR/set.yaml",
			files:  map[string]string{"set.yaml": appSetFile},
			routes: map[string][]reply{"POST /api/v1/applicationsets": {problemReply(http.StatusConflict, "applicationset guestbook exists; update it, or create with upsert=true", "")}},
			want:   []string{"POST /api/v1/applicationsets " + appSetFile},
			code:   cmdline.ExitFailed,
		},
		{name: "appset create without file", args: "appset create", code: cmdline.ExitUsage},
		{
			name:   "appset get",
			args:   "appset get guestbook",
			routes: map[string][]reply{"GET /api/v1/applicationsets/guestbook": ok(detail)},
			want:   []string{"GET /api/v1/applicationsets/guestbook"},
		},
		{
			name:   "appset get rolling",
			args:   "appset get web",
			routes: map[string][]reply{"GET /api/v1/applicationsets/web": ok(rolling)},
			want:   []string{"GET /api/v1/applicationsets/web"},
		},
		{
			name:   "appset get error",
			args:   "appset get bad",
			routes: map[string][]reply{"GET /api/v1/applicationsets/bad": ok(failing)},
			want:   []string{"GET /api/v1/applicationsets/bad"},
		},
		{
			name: "appset list",
			args: "appset list",
			routes: map[string][]reply{"GET /api/v1/applicationsets": ok(map[string]any{"items": []any{
				map[string]any{"name": "bad", "project": "default", "apps": 0, "generated": 0, "error": "duplicate application"},
				map[string]any{"name": "guestbook", "project": "default", "apps": 1, "generated": 1,
					"generators": []any{"list (2 elements)", "git directories envs apps/*"}},
			}})},
			want: []string{"GET /api/v1/applicationsets"},
		},
		{
			name:   "appset delete",
			args:   "appset delete guestbook",
			routes: map[string][]reply{"DELETE /api/v1/applicationsets/guestbook": ok(map[string]any{"deleted": []any{"default/dev-guestbook"}})},
			want:   []string{"DELETE /api/v1/applicationsets/guestbook?cascade=true"},
		},
		{
			name:   "appset delete keep apps",
			args:   "appset delete guestbook --cascade=false",
			routes: map[string][]reply{"DELETE /api/v1/applicationsets/guestbook": ok(map[string]any{})},
			want:   []string{"DELETE /api/v1/applicationsets/guestbook?cascade=false"},
		},
		{name: "appset delete without name", args: "appset delete", code: cmdline.ExitUsage},
	})
}

func TestCLIAppSetRollout(t *testing.T) {
	halted := ok(map[string]any{"set": "web", "project": "default", "target": "v2", "phase": "Halted",
		"message": "halted at step 2: default/s1: is Degraded after sync sync/default/s1/1", "step": 1, "haltedBy": "default/s1",
		"unmatched": []string{"default/x"},
		"steps": []any{
			map[string]any{"phase": "Completed", "maxUpdate": 1, "apps": []any{
				map[string]any{"project": "default", "name": "d1", "phase": "Healthy", "syncID": "sync/default/d1/1", "attempt": 1}}},
			map[string]any{"phase": "Halted", "maxUpdate": 1, "apps": []any{
				map[string]any{"project": "default", "name": "s1", "phase": "Failed", "syncID": "sync/default/s1/1", "attempt": 1,
					"message": "is Degraded after sync sync/default/s1/1"}}},
			map[string]any{"phase": "Waiting", "maxUpdate": 0, "apps": []any{}},
		}})
	const get = "GET /api/v1/applicationsets/web/rollout"
	const resume = "POST /api/v1/applicationsets/web/rollout/resume"
	runCases(t, []cliCase{
		{name: "appset rollout status", args: "appset rollout status web", routes: map[string][]reply{get: halted}, want: []string{get}},
		{name: "appset rollout status json", args: "appset rollout status web -o json", routes: map[string][]reply{get: halted}, want: []string{get}},
		{name: "appset rollout resume", args: "appset rollout resume web --reason fixed", routes: map[string][]reply{resume: halted},
			want: []string{resume + ` {"reason":"fixed"}`}},
		{name: "appset rollout pause refused", args: "appset rollout pause web",
			routes: map[string][]reply{"POST /api/v1/applicationsets/web/rollout/pause": {problemReply(http.StatusConflict, "cannot pause a rollout that is Halted", "")}},
			want:   []string{`POST /api/v1/applicationsets/web/rollout/pause {"reason":""}`}, code: cmdline.ExitFailed},
		{name: "appset rollout unknown action", args: "appset rollout restart web", code: cmdline.ExitUsage},
		{name: "appset rollout without name", args: "appset rollout status", code: cmdline.ExitUsage},
	})
}
