package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/api/auth"

	"github.com/windlass-cd/windlass/internal/customizations"
	"github.com/windlass-cd/windlass/internal/settings"
)

type fakeStatuses struct {
	list []customizations.WorkerStatus
	err  error
}

func (f fakeStatuses) List(context.Context) ([]customizations.WorkerStatus, error) {
	return f.list, f.err
}

func TestCustomizationsStatus(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	workers := []customizations.WorkerStatus{{Worker: "1@w", Status: customizations.Status{
		Source: "https://git.example.com/lib.git@main/resource_customizations", Revision: "abc", LoadedAt: at,
		Error: "fetch: connection refused", FailedAt: at.Add(time.Minute), ActionKinds: 2,
	}}}
	for _, tt := range []struct {
		name   string
		opts   []envOption
		status int
		want   CustomizationsView
	}{
		{"none configured", nil, http.StatusOK, CustomizationsView{Workers: []customizations.WorkerStatus{}}},
		{"a failing worker", []envOption{func(o *Options) { o.Customizations = fakeStatuses{list: workers} }}, http.StatusOK, CustomizationsView{Workers: workers}},
		{"redis down", []envOption{func(o *Options) { o.Customizations = fakeStatuses{err: errors.New("dial tcp: refused")} }}, http.StatusServiceUnavailable, CustomizationsView{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			en := newEnv(t, tt.opts...)
			res := en.admin(request{method: http.MethodGet, path: "/api/v1/settings/resource-customizations"})
			res.wantStatus(t, tt.status)
			if tt.status != http.StatusOK {
				return
			}
			var got CustomizationsView
			res.decode(t, &got)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("view (-want +got):\n%s", d)
			}
		})
	}
}

// The source is set, read back, replaced and cleared through the API;
// bad input is refused and keeps the stored source; only callers who may
// update every repository set it.
func TestSetCustomizations(t *testing.T) {
	en := newEnv(t)
	const path = "/api/v1/settings/resource-customizations"
	get := func() settings.CustomizationsSource {
		t.Helper()
		var v CustomizationsView
		res := en.admin(request{method: http.MethodGet, path: path})
		res.wantStatus(t, http.StatusOK)
		res.decode(t, &v)
		return v.Setting
	}
	put := func(token, body string) response {
		return en.do(request{method: http.MethodPut, path: path, body: body, token: token})
	}
	admin := en.tokens[auth.AdminAccount]

	if got := get(); got != (settings.CustomizationsSource{}) {
		t.Fatalf("initial setting: %+v", got)
	}
	want := settings.CustomizationsSource{RepoURL: "https://git.example.com/lib.git", Path: "resource_customizations", Revision: "v1"}
	put(admin, `{"repoURL":"https://git.example.com/lib.git","path":"resource_customizations","revision":"v1"}`).wantStatus(t, http.StatusOK)
	if got := get(); got != want {
		t.Fatalf("after PUT: %+v, want %+v", got, want)
	}

	for _, tt := range []struct {
		name, body string
		status     int
		detail     string
	}{
		{"not JSON", `{"repoURL":`, http.StatusBadRequest, "not a valid customizations source"},
		{"misspelt field", `{"repo":"https://git.example.com/other.git"}`, http.StatusBadRequest, `unknown field "repo"`},
		{"path without repo", `{"path":"x"}`, http.StatusBadRequest, "repoURL is required"},
		{"white space", `{"repoURL":"https://git.example.com/a b.git"}`, http.StatusBadRequest, "white space"},
		{"password in URL", `{"repoURL":"https://u:hunter2@git.example.com/lib.git"}`, http.StatusBadRequest, "holds a password"},
		{"ext transport", `{"repoURL":"ext::sh"}`, http.StatusBadRequest, "repoURL: "},
		{"escaping path", `{"repoURL":"https://git.example.com/lib.git","path":"a/../../etc"}`, http.StatusBadRequest, "inside the repository"},
		{"absolute path", `{"repoURL":"https://git.example.com/lib.git","path":"/etc"}`, http.StatusBadRequest, "relative"},
		{"option revision", `{"repoURL":"https://git.example.com/lib.git","revision":"--upload-pack=x"}`, http.StatusBadRequest, "not a branch"},
		{"viewer", `{"repoURL":"https://git.example.com/other.git"}`, http.StatusForbidden, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			token := admin
			if tt.name == "viewer" {
				token = en.tokens[viewerAccount]
			}
			res := put(token, tt.body)
			res.wantStatus(t, tt.status)
			if pr := res.problem(t); !strings.Contains(pr.Detail, tt.detail) {
				t.Errorf("detail %q, want it to contain %q", pr.Detail, tt.detail)
			}
			if strings.Contains(string(res.body), "hunter2") {
				t.Errorf("the answer echoes the password: %s", res.body)
			}
			if got := get(); got != want {
				t.Errorf("the stored source changed: %+v", got)
			}
		})
	}

	put(admin, `{"repoURL":""}`).wantStatus(t, http.StatusOK)
	if got := get(); got != (settings.CustomizationsSource{}) {
		t.Errorf("after clearing: %+v", got)
	}
}
