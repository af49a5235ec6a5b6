package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/api/auth"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// TestAppInfoReturned creates an app from an Argo CD manifest with
// spec.info and reads the info back from the create and the get.
func TestAppInfoReturned(t *testing.T) {
	const name = "info-guestbook"
	startStubApps(t, appspec.DefaultProject, name)
	en := newEnv(t, func(o *Options) { o.TaskQueue = stubAppQueue })
	body := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: " + name + "\nspec:\n" +
		"  source: {repoURL: https://git.example.com/default/guestbook.git, path: .}\n  destination: {namespace: guestbook}\n" +
		"  info:\n  - {name: Runbook, value: 'https://wiki.example.com/guestbook'}\n  - {name: Owner, value: team-a}\n"
	want := []appspec.InfoItem{{Name: "Runbook", Value: "https://wiki.example.com/guestbook"}, {Name: "Owner", Value: "team-a"}}
	wantInfo := func(t *testing.T, res response) {
		var v workflows.AppView
		res.decode(t, &v)
		if diff := cmp.Diff(want, v.Spec.Info); diff != "" {
			t.Errorf("spec.info mismatch (-want +got):\n%s", diff)
		}
	}
	apps := "/api/v1/applications"
	runSteps(t, en, []step{
		{name: "create", req: request{method: http.MethodPost, path: apps, body: body}, status: http.StatusCreated, check: wantInfo},
		{name: "get", req: request{method: http.MethodGet, path: apps + "/" + name}, status: http.StatusOK, check: wantInfo},
	})
}

// TestArgoWarningHeader creates an app whose Argo CD manifest sets a
// Kustomize option Windlass ignores: created, with a Warning header
// naming the field.
func TestArgoWarningHeader(t *testing.T) {
	const name = "warned-guestbook"
	startStubApps(t, appspec.DefaultProject, name)
	en := newEnv(t, func(o *Options) { o.TaskQueue = stubAppQueue })
	body := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: " + name + "\nspec:\n" +
		"  source: {repoURL: https://git.example.com/default/guestbook.git, path: ., kustomize: {version: v5.4.3}}\n  destination: {namespace: guestbook}\n"
	res := en.do(request{method: http.MethodPost, path: "/api/v1/applications", body: body, token: en.tokens[auth.AdminAccount]})
	if res.code != http.StatusCreated {
		t.Fatalf("create: status %d: %s", res.code, res.body)
	}
	got := res.header.Values("Warning")
	if len(got) != 1 || !strings.HasPrefix(got[0], `299 - "spec.source.kustomize.version: ignored: `) {
		t.Fatalf("Warning headers = %q, want one about spec.source.kustomize.version", got)
	}
}
