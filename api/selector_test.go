package api

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/temporal"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

func TestSelectorQuery(t *testing.T) {
	for _, tc := range []struct {
		selector, want string
	}{
		{"team=payments", "WindlassLabels = 'team=payments'"},
		{"team==payments", "WindlassLabels = 'team=payments'"},
		{"team!=payments", "WindlassLabels != 'team=payments'"},
		{"team in (search, payments)", "WindlassLabels IN ('team=payments', 'team=search')"},
		{"team notin (payments)", "WindlassLabels NOT IN ('team=payments')"},
		{"team", "WindlassLabels = 'team'"},
		{"!team", "WindlassLabels != 'team'"},
		{"example.com/tier=web,team", "WindlassLabels = 'example.com/tier=web' AND WindlassLabels = 'team'"},
		{"tier=", "WindlassLabels = 'tier='"},
	} {
		t.Run(tc.selector, func(t *testing.T) {
			sel, err := labels.Parse(tc.selector)
			if err != nil {
				t.Fatal(err)
			}
			got, err := selectorQuery(sel)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("query (-want +got):\n%s", d)
			}
		})
	}
	sel, err := labels.Parse("replicas>2")
	if err != nil {
		t.Fatal(err)
	}
	var p *Problem
	if _, err := selectorQuery(sel); !errors.As(err, &p) || p.Field != "selector" || !strings.Contains(p.Detail, "not supported") {
		t.Errorf("replicas>2: %v, want a problem naming selector", err)
	}
}

func TestLabelsOf(t *testing.T) {
	kv := map[string]string{"team": "payments", "tier": "", "example.com/x": "a"}
	if d := cmp.Diff(kv, labelsOf(workflows.LabelEntries(kv))); d != "" {
		t.Errorf("labels (-want +got):\n%s", d)
	}
}

// TestListSelector filters apps by label selector through the real
// visibility store (SQLite, as windlass dev runs it), with each operator,
// in the default and the sorted list.
func TestListSelector(t *testing.T) {
	en := newEnv(t)
	apps := map[string]map[string]string{
		"sel-a": {"team": "payments", "tier": "web"},
		"sel-b": {"team": "search", "tier": "web"},
		"sel-c": nil,
	}
	for _, name := range []string{"sel-a", "sel-b", "sel-c"} {
		app := appspec.Application{Name: name, Project: appspec.DefaultProject, Labels: apps[name],
			Source:      appspec.Source{RepoURL: "https://git.example.com/default/sel.git", Path: "."},
			Destination: appspec.Destination{Server: appspec.InClusterServer, Namespace: name}}
		// The search attributes the app workflow publishes, and the API's
		// start sets.
		attrs := []temporal.SearchAttributeUpdate{temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrName).ValueSet(name)}
		if len(app.Labels) > 0 {
			attrs = append(attrs, temporal.NewSearchAttributeKeyKeywordList(workflows.SearchAttrLabels).ValueSet(workflows.LabelEntries(app.Labels)))
		}
		if err := startApp(t.Context(), app, temporal.NewSearchAttributes(attrs...)); err != nil {
			t.Fatal(err)
		}
	}
	list := func(selector, sort string) ([]string, AppList) {
		path := "/api/v1/applications?search=sel-&selector=" + url.QueryEscape(selector)
		if sort != "" {
			path += "&sort=" + sort
		}
		var l AppList
		en.admin(request{method: http.MethodGet, path: path}).decode(t, &l)
		var names []string
		for _, it := range l.Items {
			names = append(names, it.Name)
		}
		slices.Sort(names)
		return names, l
	}
	eventually(t, visibilityWait, func() error {
		if got, _ := list("team", ""); !slices.Equal(got, []string{"sel-a", "sel-b"}) {
			return errors.New("team lists " + strings.Join(got, ","))
		}
		return nil
	})
	for _, tc := range []struct {
		selector string
		want     []string
	}{
		{"team=payments", []string{"sel-a"}},
		{"team==payments", []string{"sel-a"}},
		{"team!=payments", []string{"sel-b", "sel-c"}},
		{"team in (payments,search)", []string{"sel-a", "sel-b"}},
		{"team notin (payments)", []string{"sel-b", "sel-c"}},
		{"team", []string{"sel-a", "sel-b"}},
		{"!team", []string{"sel-c"}},
		{"tier=web,team!=search", []string{"sel-a"}},
		{"team=PAYMENTS", nil}, // values are compared with case, as Kubernetes does
		{"", []string{"sel-a", "sel-b", "sel-c"}},
	} {
		for _, sort := range []string{"", "name"} {
			got, _ := list(tc.selector, sort)
			if !slices.Equal(got, tc.want) {
				t.Errorf("selector %q sort %q lists %v, want %v", tc.selector, sort, got, tc.want)
			}
		}
	}
	_, l := list("team=payments", "")
	if len(l.Items) != 1 || !cmp.Equal(l.Items[0].Labels, apps["sel-a"]) {
		t.Errorf("the row of sel-a: %+v, want its labels", l.Items)
	}
	for _, bad := range []string{"team in (", "a b", "replicas>2", "Bad Key=x"} {
		res := en.admin(request{method: http.MethodGet, path: "/api/v1/applications?selector=" + url.QueryEscape(bad)})
		res.wantProblem(t, http.StatusBadRequest, "selector", "selector: ")
	}
}

// A refresh or skip-reconcile annotation with a value Windlass does not
// know is refused at create, naming the annotation.
func TestCreateBadAnnotation(t *testing.T) {
	en := newEnv(t)
	argo := `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: sideways
  annotations:
    argocd.argoproj.io/refresh: sideways
spec:
  project: default
  source: {repoURL: "https://git.example.com/x.git", path: .}
  destination: {server: "https://kubernetes.default.svc", namespace: x}
`
	en.admin(request{method: http.MethodPost, path: "/api/v1/applications", body: argo}).
		wantProblem(t, http.StatusBadRequest, "metadata.annotations."+appspec.AnnotationRefresh, `not "sideways"`)
	own := `{"name": "skipper", "annotations": {"argocd.argoproj.io/skip-reconcile": "yes"},
		"source": {"repoURL": "https://git.example.com/x.git", "path": "."}, "destination": {"namespace": "x"}}`
	en.admin(request{method: http.MethodPost, path: "/api/v1/applications", body: own}).
		wantProblem(t, http.StatusBadRequest, "annotations."+appspec.AnnotationSkipReconcile, `not "yes"`)
}
