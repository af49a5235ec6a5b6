package api

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/labstack/echo/v5"
	corev1 "k8s.io/api/core/v1"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// The app's project must permit the resource's kind and its namespace.
func TestCheckResourceProject(t *testing.T) {
	en := newEnv(t)
	app := runningTeamApp // team-a: namespaces team-a-*, no cluster-scoped kinds
	tests := []struct {
		name string
		key  appspec.ResourceKey
		code int // 0: permitted
	}{
		{"namespaced in a permitted namespace", appspec.ResourceKey{Group: "apps", Kind: "Deployment", Namespace: "team-a-web", Name: "web"}, 0},
		{"another namespace", appspec.ResourceKey{Kind: "Pod", Namespace: "kube-system", Name: "coredns"}, http.StatusForbidden},
		{"a cluster-scoped kind not whitelisted", appspec.ResourceKey{Kind: "Namespace", Name: "team-a-web"}, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := en.srv.checkResourceProject(t.Context(), app, tt.key)
			var p *Problem
			switch {
			case tt.code == 0 && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.code != 0 && (!errors.As(err, &p) || p.Status != tt.code):
				t.Fatalf("error %v, want a %d problem", err, tt.code)
			}
		})
	}
	missing := app
	missing.Project = "nowhere"
	if err := en.srv.checkResourceProject(t.Context(), missing, tests[0].key); err == nil {
		t.Error("a missing project permits the resource")
	}
}

func TestLogFilter(t *testing.T) {
	for _, tt := range []struct {
		filter, line string
		keep         bool
	}{
		{"", "anything", true},
		{"GET", "GET / 200", true},
		{"GET", "POST / 200", false},
		{"!healthz", "GET /healthz 200", false},
		{"!healthz", "GET / 200", true},
		{"!", "x", true},
	} {
		if got := newLogFilter(tt.filter).keep(tt.line); got != tt.keep {
			t.Errorf("filter %q on %q: keep %v, want %v", tt.filter, tt.line, got, tt.keep)
		}
	}
}

func TestLogQuery(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	for _, tt := range []struct {
		query   string
		want    corev1.PodLogOptions
		wantErr string
	}{
		{query: "", want: corev1.PodLogOptions{}},
		{query: "follow=true&previous=1&container=web&tailLines=10&sinceSeconds=60",
			want: corev1.PodLogOptions{Follow: true, Previous: true, Container: "web", TailLines: n(10), SinceSeconds: n(60)}},
		{query: "tailLines=0", want: corev1.PodLogOptions{TailLines: n(0)}},
		{query: "follow=maybe", wantErr: `follow "maybe": want true or false`},
		{query: "previous=yes", wantErr: `previous "yes": want true or false`},
		{query: "tailLines=-1", wantErr: `tailLines "-1": want a positive number`},
		{query: "sinceSeconds=0", wantErr: `sinceSeconds "0": want a positive number`},
		{query: "sinceSeconds=1h", wantErr: `sinceSeconds "1h": want a positive number`},
	} {
		t.Run(tt.query, func(t *testing.T) {
			c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/logs?"+tt.query, nil), httptest.NewRecorder())
			got, _, err := logQuery(c)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("options (-want +got):\n%s", d)
			}
		})
	}
}
