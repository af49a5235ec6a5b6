package workflows

import (
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// A resource action runs as an activity with the app's target, is
// recorded in the events with its caller, and wakes a pass; a failed one
// passes its error type on and is recorded as a warning.
func (s *appSuite) TestRunAction() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, synced)
	s.expectReconcile(sha1, synced) // the pass the action wakes
	deploy := appspec.ResourceKey{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "guestbook"}
	in := cluster.RunActionInput{ActionInput: cluster.ActionInput{Target: target(), Resource: deploy}, Action: "scale", Params: map[string]string{"replicas": "2"}}
	changes := []cluster.ActionChange{{Operation: "patch", Resource: deploy}}
	s.env.OnActivity(cluster.RunActionName, mock.Anything, in).Return(cluster.RunActionOutput{Changes: changes}, nil).Once()
	bad := in
	bad.Action, bad.Params = "explode", nil
	s.env.OnActivity(cluster.RunActionName, mock.Anything, bad).
		Return(cluster.RunActionOutput{}, temporal.NewNonRetryableApplicationError("apps/Deployment has no action \"explode\"", ErrTypeUnknownAction, nil)).Once()

	var ok, failed, invalid *updateOutcome
	s.at(time.Second, func() {
		ok = s.update(UpdateRunAction, ActionRequest{Resource: deploy, Action: "scale", Params: map[string]string{"replicas": "2"}, Initiator: "alice"})
	})
	s.at(2*time.Second, func() {
		failed = s.update(UpdateRunAction, ActionRequest{Resource: deploy, Action: "explode", Initiator: "bob"})
	})
	s.at(3*time.Second, func() { invalid = s.update(UpdateRunAction, ActionRequest{Action: "restart"}) })
	var view AppView
	s.at(time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false), Config: AppConfig{RefreshSeconds: 3600}})

	s.Require().NoError(ok.err)
	s.Equal(ActionResult{Changes: changes}, ok.result.(ActionResult))
	var app *temporal.ApplicationError
	s.Require().ErrorAs(failed.err, &app)
	s.Equal(ErrTypeUnknownAction, app.Type())
	s.Require().ErrorAs(invalid.err, &app)
	s.Equal(ErrTypeInvalidSpec, app.Type())
	s.Require().Len(view.Status.Events, 2)
	s.Equal(ReasonActionFailed, view.Status.Events[0].Reason)
	s.Equal(`bob ran action explode on apps/Deployment web/guestbook: apps/Deployment has no action "explode"`, view.Status.Events[0].Message)
	s.Equal(ReasonActionRan, view.Status.Events[1].Reason)
	s.Equal("alice ran action scale on apps/Deployment web/guestbook", view.Status.Events[1].Message)
}
