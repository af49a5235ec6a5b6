package workflows

import (
	"strings"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/placement"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// namedSpec is testSpec with its cluster named by a registered name.
func namedSpec(name string) appspec.Application {
	spec := testSpec(false)
	spec.Destination = appspec.Destination{Name: name, Namespace: "web"}
	return spec
}

// An app that names its cluster keeps the name in its spec; its compare
// reaches the server the placement resolved the name to, and a cluster
// re-pointed is followed on the next resolution (a hard refresh).
func (s *appSuite) TestDestinationNameResolved() {
	s.env.OnActivity(placement.TaskQueueName, mock.Anything, placement.Input{Name: "edge"}).
		Return(placement.Output{Server: "https://edge.example"}, nil).Once()
	s.env.OnActivity(placement.TaskQueueName, mock.Anything, placement.Input{Name: "edge"}).
		Return(placement.Output{Server: "https://edge2.example"}, nil).Once()
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectResolve(sha1, false)
	s.env.OnActivity(render.RenderName, mock.Anything, render.RenderInput{Request: ref(sha1).Request}).Return(ref(sha1), nil).Once()
	at := func(server string) cluster.Target {
		t := target()
		t.Destination = appspec.Destination{Name: "edge", Server: server, Namespace: "web"}
		return t
	}
	s.steps.On(cluster.CompareName, cluster.CompareInput{Target: at("https://edge.example"), Manifests: ref(sha1)}).Return(synced, nil).Once()
	s.expectResolve(sha1, true)
	s.env.OnActivity(render.RenderName, mock.Anything, render.RenderInput{Request: ref(sha1).Request, Hard: true}).Return(ref(sha1), nil).Once()
	s.steps.On(cluster.CompareName, cluster.CompareInput{Target: at("https://edge2.example"), Manifests: ref(sha1), Fresh: true}).
		Return(synced, nil).Once()
	var view AppView
	s.at(time.Minute, func() { s.env.SignalWorkflow(SignalRefresh, RefreshRequest{Reason: "test", Hard: true}) })
	s.at(2*time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: namedSpec("edge"), Config: AppConfig{RefreshSeconds: 3600}})
	s.Equal(appspec.Destination{Name: "edge", Namespace: "web"}, view.Spec.Destination)
	s.Equal(appspec.SyncSynced, view.Status.Sync)
	s.steps.AssertExpectations(s.T())
}

// A name no cluster is registered under leaves the app Unknown, saying so,
// and nothing reaches a cluster (the empty server would be the local one).
func (s *appSuite) TestDestinationNameUnknown() {
	var view AppView
	s.at(time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: namedSpec("nowhere"), Config: AppConfig{RefreshSeconds: 3600}})
	s.Equal(appspec.SyncUnknown, view.Status.Sync)
	s.True(strings.Contains(view.Status.Message, "destination.name nowhere: destination cluster is not registered"), view.Status.Message)
	s.True(strings.HasPrefix(view.Status.Message, "destination: "), view.Status.Message)
}

// A project with orphanedResources makes each pass look for orphans in
// the app's namespaces; with warn, finding some is a warning.
func (s *appSuite) TestOrphanedResourcesWarn() {
	placeholder[cluster.OrphansInput, cluster.OrphansOutput](s.env, cluster.OrphansName)
	proj := appspec.DefaultProjectSpec()
	proj.OrphanedResources = &appspec.OrphanedResources{Warn: true, Ignore: []appspec.OrphanedResourceKey{{Kind: "Secret"}}}
	s.expectProject(proj)
	s.expectReconcile(sha1, synced)
	stray := appspec.ResourceKey{Kind: "ConfigMap", Namespace: "web", Name: "stray"}
	s.env.OnActivity(cluster.OrphansName, mock.Anything, cluster.OrphansInput{Target: target(), Namespaces: []string{"web"}, Settings: *proj.OrphanedResources}).
		Return(cluster.OrphansOutput{Count: 1, Resources: []appspec.ResourceKey{stray}}, nil).Once()
	var view AppView
	s.at(time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false), Config: AppConfig{RefreshSeconds: 3600}})
	s.Equal(&cluster.OrphansOutput{Count: 1, Resources: []appspec.ResourceKey{stray}, Warning: "1 orphaned resources in the app's namespaces"},
		view.Status.OrphanedResources)
}
