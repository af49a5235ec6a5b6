package api

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/internal/customizations"
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
