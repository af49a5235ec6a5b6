package workflows

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/notify"
	"github.com/windlass-cd/windlass/internal/notifications"
)

// maxNotifications bounds the delivery records an app keeps.
const maxNotifications = 50

// Delivery results in NotificationRecord.
const (
	NotificationSent   = "Sent"
	NotificationFailed = "Failed"
)

// NotificationRecord is the outcome of one delivery.
type NotificationRecord struct {
	Time      time.Time `json:"time"`
	Key       string    `json:"key"`
	Trigger   string    `json:"trigger"`
	Template  string    `json:"template"`
	Service   string    `json:"service"`
	Recipient string    `json:"recipient,omitempty"`
	OncePer   string    `json:"oncePer,omitempty"`
	Result    string    `json:"result"`
	Attempts  int32     `json:"attempts,omitempty"`
	Error     string    `json:"error,omitempty"`
}

// notifying is a run's own notification state.
type notifying struct {
	// lastNotified is the app as the last evaluation saw it: a pass that
	// changed nothing a trigger reads evaluates nothing.
	lastNotified *notifications.App
	// inFlight counts the deliveries started and not finished.
	inFlight int
	// problems are the last refused subscriptions, reported once.
	problems []string
	// offUntil: no configuration was set at the last evaluation; the next
	// looks again after notifyRecheck, not at every change.
	offUntil time.Time
}

// notifyRecheck is how long an app without a notifications configuration
// waits before it asks again: a configuration set later applies within it.
const notifyRecheck = 10 * time.Minute

// notificationsOn says the run notifies (changeApp020): after each pass,
// each sync's start and a deletion, it evaluates the triggers and starts
// one delivery activity per (trigger, destination, oncePer value).
func (a *application) notificationsOn() bool { return a.v020 >= 1 }

// notificationApp is the app as triggers and templates see it.
func (a *application) notificationApp() notifications.App {
	app := a.view().NotificationApp()
	app.Deleting = a.deleting != nil
	return app
}

// NotificationApp is the app as notification triggers and templates see
// it: the running sync, else the last one, is its operation.
func (v AppView) NotificationApp() notifications.App {
	s, st := v.Spec, v.Status
	src := s.Source
	for _, x := range s.Sources {
		if x.Path != "" || x.Chart != "" {
			src = x
			break
		}
	}
	app := notifications.App{
		Name: s.Name, Project: s.Project, Namespace: s.SourceNamespace, Labels: s.Labels, Annotations: s.Annotations,
		RepoURL: src.RepoURL, Path: src.Path, Chart: src.Chart, TargetRevision: src.TargetRevision,
		DestServer: s.Destination.Server, DestName: s.Destination.Name, DestNamespace: s.Destination.Namespace,
		Sync: string(st.Sync), Health: string(st.Health), Revision: st.SHA, Message: st.Message,
	}
	if op := st.Operation; op != nil {
		app.Operation = &notifications.Operation{ID: op.SyncID, Phase: op.Phase, Initiator: op.Initiator,
			Automated: op.Initiator == InitiatorAutomated, StartedAt: op.StartedAt}
	} else if len(v.History) > 0 {
		h := v.History[0]
		app.Operation = &notifications.Operation{ID: h.ID, Phase: h.Phase, Message: h.Message, Revision: h.SHA,
			Initiator: h.Initiator, Automated: h.Initiator == InitiatorAutomated, StartedAt: h.StartedAt, FinishedAt: h.FinishedAt}
	}
	return app
}

// notify evaluates the triggers against the app and starts the
// deliveries they call for. It never waits for a delivery: a sync goes on
// while they run.
func (a *application) notify(ctx workflow.Context) {
	if !a.notificationsOn() {
		return
	}
	app := a.notificationApp()
	if a.lastNotified != nil && sameJSON(app, *a.lastNotified) || workflow.Now(ctx).Before(a.offUntil) {
		return
	}
	a.lastNotified = &app
	a.st.NotifyEvals++
	var proj map[string]string
	if a.project != nil {
		proj = a.project.Annotations
	}
	plan, err := evaluateNotifications(ctx, notify.EvaluateInput{
		AppKey: a.st.Spec.Project + "/" + a.st.Spec.Name, App: app, ProjectAnnotations: proj,
		State: a.st.Notified, Epoch: a.st.NotifyEvals,
	})
	if err != nil {
		a.lastNotified = nil // try again at the next pass
		workflow.GetLogger(ctx).Warn(msgNotifyEvalFailed, "err", errorMessage(err))
		return
	}
	if plan.Off {
		a.offUntil = workflow.Now(ctx).Add(notifyRecheck)
		return
	}
	a.st.Notified = plan.State
	if !slices.Equal(plan.Problems, a.problems) {
		for _, p := range plan.Problems {
			a.event(ctx, EventWarning, "NotificationRefused", p)
		}
		a.problems = plan.Problems
	}
	for _, d := range plan.Deliveries {
		a.deliver(ctx, d, app)
	}
}

const msgNotifyEvalFailed = "notification triggers not evaluated"

// deliver starts one delivery and records its outcome when it ends.
func (a *application) deliver(ctx workflow.Context, d notifications.Delivery, app notifications.App) {
	a.inFlight++
	fut := deliverNotification(ctx, notify.DeliverInput{Delivery: d, App: app, MaxAttempts: notifyAttempts}, a.st.NotifyEvals)
	workflow.Go(ctx, func(gctx workflow.Context) {
		var out notify.DeliverOutput
		err := fut.Get(gctx, &out)
		a.inFlight--
		rec := NotificationRecord{Time: workflow.Now(gctx), Key: d.Key, Trigger: d.Trigger, Template: d.Template,
			Service: d.Service, Recipient: d.Recipient, OncePer: d.OncePer, Result: NotificationSent, Attempts: out.Attempts}
		what := fmt.Sprintf("%s (%s) to %s:%s", d.Trigger, d.Template, d.Service, d.Recipient)
		if err != nil {
			rec.Result, rec.Error = NotificationFailed, errorMessage(err)
			var ae *temporal.ApplicationError
			if errors.As(err, &ae) && ae.HasDetails() && ae.Details(&out) == nil {
				rec.Attempts = out.Attempts // a final failure carries its attempts
			}
			a.event(gctx, EventWarning, "NotificationFailed", what+": "+rec.Error)
		} else {
			a.event(gctx, EventNormal, "NotificationSent", fmt.Sprintf("%s, attempt %d", what, out.Attempts))
		}
		a.st.Notifications = append([]NotificationRecord{rec}, a.st.Notifications...)
		if len(a.st.Notifications) > maxNotifications {
			a.st.Notifications = a.st.Notifications[:maxNotifications]
		}
	})
}
