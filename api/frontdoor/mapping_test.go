package frontdoor

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// object parses a YAML resource as the informer hands it out.
func object(t *testing.T, doc string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

const guestbookCR = `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: guestbook
  namespace: argocd
  uid: 0b5e8d8c-1111-2222-3333-444455556666
  resourceVersion: "123"
  generation: 4
  creationTimestamp: "2026-01-01T00:00:00Z"
  finalizers: [resources-finalizer.argocd.argoproj.io, foregroundDeletion]
  labels: {team: web}
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{"big": "copy"}'
    notifications.argoproj.io/subscribe.on-sync-succeeded.slack: deploys
  managedFields:
  - manager: kubectl-client-side-apply
    operation: Update
spec:
  project: default
  source: {repoURL: 'https://git.example.com/apps.git', path: guestbook, targetRevision: main}
  destination: {server: 'https://kubernetes.default.svc', namespace: guestbook}
  syncPolicy: {automated: {prune: true}}
status:
  sync: {status: Synced, revision: abc}
  health: {status: Healthy}
operation:
  sync: {revision: main}
`

func TestSpecOf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		edit    func(m map[string]any)
		want    func(a *appspec.Application)
		wantErr string
	}{
		{name: "Argo CD resource as read, server fields, status and operation dropped"},
		{name: "an unknown finalizer is Kubernetes' business", edit: func(m map[string]any) {
			m["metadata"].(map[string]any)["finalizers"] = []any{"example.com/other"}
		}},
		{name: "no labels or annotations", edit: func(m map[string]any) {
			meta := m["metadata"].(map[string]any)
			delete(meta, "labels")
			delete(meta, "annotations")
		}, want: func(a *appspec.Application) {
			a.Labels, a.Annotations = nil, map[string]string{DeclaredBy: "argocd/guestbook"}
		}},
		{name: "unsupported field refused by name", edit: func(m map[string]any) {
			m["spec"].(map[string]any)["destination"] = map[string]any{"server": "https://kubernetes.default.svc", "namespace": "guestbook", "bogus": "x"}
		}, wantErr: "spec.destination.bogus"},
		{name: "no source", edit: func(m map[string]any) {
			delete(m["spec"].(map[string]any), "source")
		}, wantErr: "source"},
		{name: "no spec", edit: func(m map[string]any) { delete(m, "spec") }, wantErr: "spec"},
		{name: "bad name", edit: func(m map[string]any) {
			m["metadata"].(map[string]any)["name"] = "Not_A_Name"
		}, wantErr: "metadata.name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := object(t, guestbookCR)
			if tc.edit != nil {
				tc.edit(m)
			}
			got, err := specOf(m, "argocd/guestbook")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, appspec.ErrInvalid) {
					t.Fatalf("specOf = %+v, %v; want an invalid-spec error naming %s", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want, err := appspec.ParseApplication([]byte(`{"name": "guestbook", "project": "default",
				"source": {"repoURL": "https://git.example.com/apps.git", "path": "guestbook", "targetRevision": "main"},
				"destination": {"server": "https://kubernetes.default.svc", "namespace": "guestbook"},
				"syncPolicy": {"automated": {"prune": true}}}`))
			if err != nil {
				t.Fatal(err)
			}
			want.Labels = map[string]string{"team": "web"}
			want.Annotations = map[string]string{"notifications.argoproj.io/subscribe.on-sync-succeeded.slack": "deploys", DeclaredBy: "argocd/guestbook"}
			if tc.want != nil {
				tc.want(&want)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("specOf (-want +got):\n%s", d)
			}
		})
	}
}

func TestRefOf(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want appRef
	}{
		{`{metadata: {name: a}, spec: {project: team}}`, appRef{"team", "a"}},
		{`{metadata: {name: a}, spec: {}}`, appRef{"default", "a"}},
		{`{metadata: {name: a}}`, appRef{"default", "a"}},
		{`{metadata: {name: a}, spec: {project: [not, a, string]}}`, appRef{"default", "a"}},
	} {
		if got := refOf(object(t, tc.doc)); got != tc.want {
			t.Errorf("refOf(%s) = %+v, want %+v", tc.doc, got, tc.want)
		}
	}
}

func TestCascadeOf(t *testing.T) {
	for _, tc := range []struct {
		finalizers []string
		want       string
		has        bool
		rest       []string
	}{
		{nil, cascadeOrphan, false, []string{}},
		{[]string{"example.com/x"}, cascadeOrphan, false, []string{"example.com/x"}},
		{[]string{finalizer}, cascadeForeground, true, []string{}},
		{[]string{"example.com/x", finalizer + "/foreground"}, cascadeForeground, true, []string{"example.com/x"}},
		{[]string{finalizer + "/background", "foregroundDeletion"}, cascadeBackground, true, []string{"foregroundDeletion"}},
	} {
		got, has := cascadeOf(tc.finalizers)
		if got != tc.want || has != tc.has {
			t.Errorf("cascadeOf(%v) = %s, %v; want %s, %v", tc.finalizers, got, has, tc.want, tc.has)
		}
		if d := cmp.Diff(tc.rest, withoutFinalizer(tc.finalizers)); d != "" {
			t.Errorf("withoutFinalizer(%v) (-want +got):\n%s", tc.finalizers, d)
		}
	}
}

// syncedStatus is the status of the synced app of TestRenderStatus.
const syncedStatus = `
sync: {status: Synced, revision: abc123}
health: {status: Healthy}
operationState:
  operation: {sync: {revision: abc123, prune: true}, initiatedBy: {automated: true}}
  phase: Succeeded
  message: successfully synced
  syncResult: {revision: abc123}
  startedAt: "2026-03-01T10:00:00Z"
  finishedAt: "2026-03-01T10:00:05Z"
resources:
- {group: apps, version: v1, kind: Deployment, namespace: gb, name: ui, status: Synced, health: {status: Progressing, message: rolling out}}
- {kind: ConfigMap, namespace: gb, name: old, status: OutOfSync, requiresPruning: true}`

func TestRenderStatus(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	now := t0.Add(time.Hour)
	synced := &workflows.AppView{
		Status: workflows.AppStatus{Sync: appspec.SyncSynced, Health: appspec.HealthHealthy, SHA: "abc123",
			Resources: []appspec.ResourceStatus{
				{ResourceKey: appspec.ResourceKey{Group: "apps", Kind: "Deployment", Namespace: "gb", Name: "ui"}, Version: "v1",
					Status: appspec.SyncSynced, Health: appspec.HealthProgressing, HealthMessage: "rolling out"},
				{ResourceKey: appspec.ResourceKey{Kind: "ConfigMap", Namespace: "gb", Name: "old"}, Status: appspec.SyncOutOfSync, RequiresPruning: true},
			}},
		History: []workflows.SyncSummary{
			{ID: "sync/default/gb/2", SHA: "abc123", Phase: workflows.PhaseSucceeded, Message: "successfully synced", Initiator: workflows.InitiatorAutomated,
				Prune: true, StartedAt: t0, FinishedAt: t0.Add(5 * time.Second)},
			{ID: "sync/default/gb/1", SHA: "old", Phase: workflows.PhaseFailed},
		},
	}
	running := &workflows.AppView{Status: workflows.AppStatus{Sync: appspec.SyncOutOfSync, Health: appspec.HealthMissing,
		Operation: &workflows.Operation{SyncID: "sync/default/gb/3", Phase: workflows.PhasePending, Initiator: "admin", StartedAt: t0}}}
	terminated := &workflows.AppView{Status: workflows.AppStatus{Sync: appspec.SyncOutOfSync, Health: appspec.HealthHealthy},
		History: []workflows.SyncSummary{{SHA: "s", Phase: workflows.PhaseTerminated, Message: "terminated by admin", Initiator: "admin", StartedAt: t0}}}
	unknown := &workflows.AppView{Status: workflows.AppStatus{Sync: appspec.SyncUnknown, Health: appspec.HealthUnknown, Message: "repository not found"}}
	invalid := condition{Type: condInvalidSpec, Message: "spec.source: is required"}
	excluded := &workflows.AppView{Status: workflows.AppStatus{Sync: appspec.SyncSynced, Health: appspec.HealthHealthy,
		Conditions: []appspec.Condition{{Type: appspec.ConditionExcludedResourceWarning, Message: "Secret gb/s is not applied"}}}}

	for _, tc := range []struct {
		name  string
		view  *workflows.AppView
		conds []condition
		prev  string
		want  string
	}{
		{name: "synced and healthy, last sync and resources", view: synced, want: syncedStatus},
		{name: "operation running", view: running, want: `
sync: {status: OutOfSync}
health: {status: Missing}
operationState: {operation: {sync: {}, initiatedBy: {username: admin}}, phase: Running, startedAt: "2026-03-01T10:00:00Z"}`},
		{name: "terminated sync is Failed", view: terminated, want: `
sync: {status: OutOfSync}
health: {status: Healthy}
operationState: {operation: {sync: {revision: s}, initiatedBy: {username: admin}}, phase: Failed, message: terminated by admin, syncResult: {revision: s}, startedAt: "2026-03-01T10:00:00Z"}`},
		{name: "unknown with a reason is a ComparisonError", view: unknown, want: `
sync: {status: Unknown}
health: {status: Unknown}
conditions: [{type: ComparisonError, message: repository not found, lastTransitionTime: "2026-03-01T11:00:00Z"}]`},
		{name: "an excluded resource is a warning", view: excluded, want: `
sync: {status: Synced}
health: {status: Healthy}
conditions: [{type: ExcludedResourceWarning, message: Secret gb/s is not applied, lastTransitionTime: "2026-03-01T11:00:00Z"}]`},
		{name: "no app, invalid spec", conds: []condition{invalid}, want: `
sync: {status: Unknown}
health: {status: Unknown}
conditions: [{type: InvalidSpecError, message: "spec.source: is required", lastTransitionTime: "2026-03-01T11:00:00Z"}]`},
		{name: "same condition keeps its time", conds: []condition{invalid},
			prev: `{conditions: [{type: InvalidSpecError, message: "spec.source: is required", lastTransitionTime: "2026-03-01T10:00:00Z"}]}`, want: `
sync: {status: Unknown}
health: {status: Unknown}
conditions: [{type: InvalidSpecError, message: "spec.source: is required", lastTransitionTime: "2026-03-01T10:00:00Z"}]`},
		{name: "changed message is a new transition", conds: []condition{invalid},
			prev: `{conditions: [{type: InvalidSpecError, message: "other", lastTransitionTime: "2026-03-01T10:00:00Z"}]}`, want: `
sync: {status: Unknown}
health: {status: Unknown}
conditions: [{type: InvalidSpecError, message: "spec.source: is required", lastTransitionTime: "2026-03-01T11:00:00Z"}]`},
		{name: "invalid spec over a running app keeps the app's status", view: synced, conds: []condition{invalid}, want: syncedStatus + `
conditions: [{type: InvalidSpecError, message: "spec.source: is required", lastTransitionTime: "2026-03-01T11:00:00Z"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var prev map[string]any
			if tc.prev != "" {
				prev = object(t, tc.prev)
			}
			got := renderStatus(tc.view, tc.conds, prev, now)
			if d := cmp.Diff(object(t, tc.want), got); d != "" {
				t.Fatalf("renderStatus (-want +got):\n%s", d)
			}
			if !sameStatus(object(t, tc.want), got) {
				t.Fatal("sameStatus is false for the status just rendered")
			}
		})
	}
}

func TestSameStatus(t *testing.T) {
	want := renderStatus(&workflows.AppView{Status: workflows.AppStatus{Sync: appspec.SyncSynced, Health: appspec.HealthHealthy}}, nil, nil, time.Time{})
	for _, tc := range []struct {
		cur  any
		same bool
	}{
		{nil, false},
		{"not a map", false},
		{map[string]any{"sync": map[string]any{"status": "Synced"}, "health": map[string]any{"status": "Healthy"}}, true},
		{map[string]any{"sync": map[string]any{"status": "OutOfSync"}, "health": map[string]any{"status": "Healthy"}}, false},
		{map[string]any{"sync": map[string]any{"status": "Synced"}, "health": map[string]any{"status": "Healthy"}, "summary": map[string]any{}}, false},
	} {
		if got := sameStatus(tc.cur, want); got != tc.same {
			t.Errorf("sameStatus(%v) = %v, want %v", tc.cur, got, tc.same)
		}
	}
}
