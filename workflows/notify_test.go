package workflows

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/notify"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/notifications"
	"github.com/windlass-cd/windlass/internal/secretstore"
)

// notifySpy answers Evaluate from a real configuration and records the
// deliveries instead of sending them.
type notifySpy struct {
	acts *notify.Activities
	mu   sync.Mutex
	got  []notify.DeliverInput
	// evals counts the evaluations.
	evals int
	fail  map[string]error // by trigger
}

func (s *appSuite) spyNotifications(data map[string]string) *notifySpy {
	cfg, err := notifications.Parse(data)
	s.Require().NoError(err)
	acts, err := notify.New(notify.StaticSource{Config: cfg}, &secretstore.Memory{}, slog.New(slog.DiscardHandler))
	s.Require().NoError(err)
	spy := &notifySpy{acts: acts, fail: map[string]error{}}
	s.env.OnActivity(notify.EvaluateName, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in notify.EvaluateInput) (notifications.Plan, error) {
			spy.mu.Lock()
			spy.evals++
			spy.mu.Unlock()
			return acts.Evaluate(ctx, in)
		}).Maybe()
	s.env.OnActivity(notify.DeliverName, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in notify.DeliverInput) (notify.DeliverOutput, error) {
			spy.mu.Lock()
			defer spy.mu.Unlock()
			spy.got = append(spy.got, in)
			if err := spy.fail[in.Delivery.Trigger]; err != nil {
				return notify.DeliverOutput{}, err
			}
			return notify.DeliverOutput{Attempts: 1}, nil
		}).Maybe()
	return spy
}

func (n *notifySpy) triggers() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, d := range n.got {
		out = append(out, d.Delivery.Trigger+"/"+d.Delivery.OncePer)
	}
	return out
}

var hookConfig = map[string]string{"service.webhook.hook": "url: http://127.0.0.1:9/x"}

func notifiedSpec() appspec.Application {
	a := testSpec(true)
	a.Annotations = map[string]string{
		notifications.AnnotationPrefix + "on-sync-failed.hook":  "",
		notifications.AnnotationPrefix + "on-deployed.hook":     "",
		notifications.AnnotationPrefix + "on-sync-running.hook": "",
	}
	return a
}

// A failed sync notifies once, a sync of a new revision that ends healthy
// notifies on-deployed once, and passes that change nothing notify
// nothing; the outcomes are recorded in the events and the history.
func (s *appSuite) TestNotificationsOncePerSync() {
	spy := s.spyNotifications(hookConfig)
	spy.fail[notifications.TriggerSyncRunning] = temporal.NewNonRetryableApplicationError("POST http://127.0.0.1/…: 400 Bad Request", notify.ErrTypeDelivery, nil,
		notify.DeliverOutput{Attempts: 3})
	rejected := temporal.NewNonRetryableApplicationError("apply rejected", "ApplyFailed", nil)
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, outOfSync)
	s.expectSync(1, sha1, rejected)
	s.expectReconcile(sha1, outOfSync)
	s.expectReconcile(sha1, outOfSync) // timer: same SHA, no sync, no notification
	s.expectReconcile(sha2, outOfSync)
	s.expectSync(2, sha2, nil)
	s.expectReconcile(sha2, synced)
	s.expectReconcile(sha2, synced) // timer: deployed already notified
	var view AppView
	var recs []NotificationRecord
	s.at(10*time.Minute, func() {
		view = s.status()
		v, err := s.env.QueryWorkflow(QueryNotifications)
		s.Require().NoError(err)
		s.Require().NoError(v.Get(&recs))
		s.env.CancelWorkflow()
	})
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: notifiedSpec(), Config: AppConfig{RefreshSeconds: 180}})
	start1 := view.History[1].StartedAt.UTC().Format(time.RFC3339)
	start2 := view.History[0].StartedAt.UTC().Format(time.RFC3339)
	s.Equal([]string{
		"on-sync-running/" + start1, "on-sync-failed/" + start1,
		"on-sync-running/" + start2, "on-deployed/" + sha2,
	}, spy.triggers())
	for _, d := range spy.got {
		s.Equal("hook", d.Delivery.Service)
		s.Equal(int32(notifyAttempts), d.MaxAttempts)
		s.Equal("default/guestbook", d.Delivery.App)
	}
	failed := spy.got[1].App.Operation
	s.Require().NotNil(failed)
	s.Equal(PhaseFailed, failed.Phase)
	s.Contains(failed.Message, "apply rejected")
	s.Require().Len(recs, 4)
	s.Equal([]string{NotificationSent, NotificationFailed, NotificationSent, NotificationFailed},
		[]string{recs[0].Result, recs[1].Result, recs[2].Result, recs[3].Result})
	s.Equal("on-deployed", recs[0].Trigger)
	s.Equal(int32(1), recs[0].Attempts)
	s.Contains(recs[1].Error, "400 Bad Request")
	s.Equal(int32(3), recs[1].Attempts, "a failure records its attempts")
	var reasons []string
	for _, e := range view.Status.Events {
		reasons = append(reasons, e.Reason)
	}
	s.Contains(reasons, "NotificationSent")
	s.Contains(reasons, "NotificationFailed")
}

// A run that started before changeApp020 evaluates nothing.
func (s *appSuite) TestNotificationsOffForOldRuns() {
	s.env.OnGetVersion(changeApp020, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	spy := s.spyNotifications(hookConfig)
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, outOfSync)
	s.expectSync(1, sha1, nil)
	s.expectReconcile(sha1, synced)
	s.at(time.Minute, s.env.CancelWorkflow)
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: notifiedSpec()})
	s.Empty(spy.triggers())
	s.Zero(spy.evals)
}
