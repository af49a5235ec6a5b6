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
