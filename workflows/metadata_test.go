package workflows

import (
	"strings"
	"sync"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
)

func withAnnotation(spec appspec.Application, k, v string) appspec.Application {
	spec.Annotations = map[string]string{k: v}
	return spec
}

// A refresh annotation arriving with setSpec refreshes the app once, hard
// when it says so, and is not kept in the spec.
func (s *appSuite) TestRefreshAnnotation() {
	for _, hard := range []bool{false, true} {
		name := appspec.RefreshNormal
		if hard {
			name = appspec.RefreshHard
		}
		s.Run(name, func() {
			s.SetupTest()
			s.expectProject(appspec.DefaultProjectSpec())
			s.expectPass(sha1, false, false, ptr(ref(sha1)), ref(sha1), synced)
			var rendered *render.ManifestRef
			if hard {
				rendered = ptr(ref(sha1))
			}
			s.expectPass(sha1, true, hard, rendered, ref(sha1), synced)
			var set *updateOutcome
			var view AppView
			s.at(time.Minute, func() {
				set = s.update(UpdateSetSpec, withAnnotation(testSpec(false), appspec.AnnotationRefresh, name))
			})
			s.at(2*time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
			s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false), Config: AppConfig{RefreshSeconds: 3600}})
			s.Require().NoError(set.err)
			s.Nil(set.result.(AppView).Spec.Annotations, "the annotation is removed from the stored spec")
			s.Nil(view.Spec.Annotations)
			s.EqualValues(1, view.Refreshes)
			s.assertExpectations()
		})
	}
}

// A bad refresh annotation is refused by setSpec's validator, naming it.
func (s *appSuite) TestRefreshAnnotationSideways() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, synced)
	var set *updateOutcome
	s.at(time.Second, func() {
		set = s.update(UpdateSetSpec, withAnnotation(testSpec(false), appspec.AnnotationRefresh, "sideways"))
	})
	s.cancelAt(time.Minute)
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false)})
	s.False(set.accepted)
	var app *temporal.ApplicationError
	s.Require().ErrorAs(set.err, &app)
	s.Equal(ErrTypeInvalidSpec, app.Type())
	s.Contains(app.Message(), appspec.AnnotationRefresh)
}

// skip-reconcile pauses the app: no pass for a refresh, a sync is refused
// with ReconcileSkipped, the status says so; removing it resumes, and an
// automated app then syncs.
func (s *appSuite) TestSkipReconcile() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, synced)
	paused := withAnnotation(testSpec(true), appspec.AnnotationSkipReconcile, "true")
	var pause, resume, sync *updateOutcome
	var during AppView
	s.at(time.Minute, func() { pause = s.update(UpdateSetSpec, paused) })
	s.at(2*time.Minute, func() { s.env.SignalWorkflow(SignalRefresh, RefreshRequest{Reason: "push"}) })
	s.at(3*time.Minute, func() { during = s.status(); sync = s.update(UpdateSync, SyncRequest{Initiator: "alice"}) })
	// Resumed: the pass (fresh, for the push that came while paused)
	// finds it OutOfSync and syncs.
	s.expectResolve(sha1, true)
	s.steps.On(cluster.CompareName, cluster.CompareInput{Target: target(), Manifests: ref(sha1)}).Return(outOfSync, nil).Once()
	s.expectSync(1, sha1, nil)
	s.expectReconcile(sha1, synced)
	s.at(4*time.Minute, func() { resume = s.update(UpdateSetSpec, testSpec(true)) })
	var after AppView
	s.at(5*time.Minute, func() { after = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(true), Config: AppConfig{RefreshSeconds: 3600}})
	s.Require().NoError(pause.err)
	s.Require().NoError(resume.err)
	s.True(during.Status.ReconcileSkipped)
	s.Equal("ReconcileSkipped", during.Status.Events[0].Reason)
	var app *temporal.ApplicationError
	s.Require().ErrorAs(sync.err, &app)
	s.Equal(ErrTypeReconcileSkipped, app.Type())
	s.Contains(app.Message(), appspec.AnnotationSkipReconcile)
	s.False(after.Status.ReconcileSkipped)
	s.Equal("ReconcileResumed", after.Status.Events[0].Reason)
	s.Require().Len(after.History, 1)
	s.Equal(appspec.SyncSynced, after.Status.Sync)
}

// An app created paused runs no pass at all.
func (s *appSuite) TestSkipReconcileFromTheStart() {
	var view AppView
	s.at(time.Hour, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: withAnnotation(testSpec(true), appspec.AnnotationSkipReconcile, "true")})
	s.True(view.Status.ReconcileSkipped)
	s.Equal(appspec.SyncUnknown, view.Status.Sync)
	s.Zero(s.stepCalls(cluster.CompareName))
}

// A run that started before changeApp020 ignores the annotations and
// publishes no labels.
func (s *appSuite) TestMetadataOldPath() {
	s.env.OnGetVersion(changeApp020, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	labels := s.labelUpserts()
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, synced)
	spec := withAnnotation(testSpec(false), appspec.AnnotationSkipReconcile, "true")
	spec.Labels = map[string]string{"team": "payments"}
	var view AppView
	s.at(time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: spec})
	s.False(view.Status.ReconcileSkipped)
	s.Equal(appspec.SyncSynced, view.Status.Sync)
	s.Empty(labels())
}

// labelUpserts records the WindlassLabels values the upserts write.
func (s *appSuite) labelUpserts() func() [][]string {
	var (
		mu  sync.Mutex
		got [][]string
	)
	s.env.OnUpsertTypedSearchAttributes(mock.Anything).Return(nil).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		if v, ok := sa.GetKeywordList(saLabels); ok {
			mu.Lock()
			got = append(got, v)
			mu.Unlock()
		}
	})
	return func() [][]string { mu.Lock(); defer mu.Unlock(); return got }
}

// The labels are published as "key" and "key=value", and again when a
// spec changes them.
func (s *appSuite) TestLabelsPublished() {
	labels := s.labelUpserts()
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, synced)
	s.expectReconcile(sha1, synced)
	spec := testSpec(false)
	spec.Labels = map[string]string{"team": "payments", "tier": ""}
	changed := testSpec(false)
	changed.Labels = map[string]string{"team": "search"}
	s.at(time.Minute, func() { s.update(UpdateSetSpec, changed) })
	s.cancelAt(2 * time.Minute)
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: spec, Config: AppConfig{RefreshSeconds: 3600}})
	want := [][]string{{"team", "team=payments", "tier", "tier="}, {"team", "team=search"}}
	if d := cmp.Diff(want, labels()); d != "" {
		s.Fail("label upserts (-want +got)", d)
	}
}

// A refresh annotation whose setSpec lands while a pass runs (the spec is
// otherwise the same) still gets its own hard pass after that one.
func (s *appSuite) TestRefreshAnnotationDuringAPass() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectPass(sha1, false, false, ptr(ref(sha1)), ref(sha1), synced)
	s.expectPass(sha1, true, false, nil, ref(sha1), synced) // the refresh signal's
	s.expectPass(sha1, true, true, ptr(ref(sha1)), ref(sha1), synced)
	s.at(time.Minute, func() {
		s.env.SignalWorkflow(SignalRefresh, RefreshRequest{Reason: "push"})
		s.update(UpdateSetSpec, withAnnotation(testSpec(false), appspec.AnnotationRefresh, appspec.RefreshHard))
	})
	s.cancelAt(2 * time.Minute)
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false), Config: AppConfig{RefreshSeconds: 3600}})
}

// The dependencies are published as "<project>/<name>" for the reverse
// lookup, and unset when a spec drops them.
func (s *appSuite) TestDependsOnPublished() {
	var (
		mu  sync.Mutex
		got []string
	)
	s.env.OnUpsertTypedSearchAttributes(mock.Anything).Return(nil).Run(func(args mock.Arguments) {
		// Each publish (it sets WindlassApp) sets or unsets the
		// dependencies; an unset value reads as absent.
		sa := args.Get(0).(temporal.SearchAttributes)
		if !sa.ContainsKey(saApp) {
			return
		}
		v := "unset"
		if deps, ok := sa.GetKeywordList(saDependsOn); ok {
			v = strings.Join(deps, ",")
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) == 0 || got[len(got)-1] != v {
			got = append(got, v)
		}
	})
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, synced)
	s.expectReconcile(sha1, synced)
	spec := testSpec(false)
	spec.DependsOn = []string{"db", "infra/net"}
	s.at(time.Minute, func() { s.update(UpdateSetSpec, testSpec(false)) })
	s.cancelAt(2 * time.Minute)
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: spec, Config: AppConfig{RefreshSeconds: 3600}})
	mu.Lock()
	defer mu.Unlock()
	if d := cmp.Diff([]string{"default/db,infra/net", "unset"}, got); d != "" {
		s.Fail("dependsOn upserts (-want +got)", d)
	}
}
