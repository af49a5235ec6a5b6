package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/windlass-cd/windlass/internal/ghapp"
	"github.com/windlass-cd/windlass/internal/metrics"
	"github.com/windlass-cd/windlass/internal/notifications"
	"github.com/windlass-cd/windlass/internal/secretstore"
)

// Activity names: wire contracts, never rename.
const (
	EvaluateName = "notify.Evaluate"
	DeliverName  = "notify.Deliver"
)

// ErrTypeDelivery is the type of a delivery that retrying cannot fix.
const ErrTypeDelivery = "NotificationFailed"

// SecretName is the secret-store entry that holds the credentials the
// services refer to ("$key"), like Argo CD's argocd-notifications-secret.
const SecretName = "windlass-notifications"

// Results of windlass_notifications_total.
const (
	ResultSent    = "sent"
	ResultRetried = "retried"
	ResultFailed  = "failed"
)

// ConfigSource returns the current configuration, nil when none is set.
type ConfigSource interface {
	Notifications(ctx context.Context) (*notifications.Config, error)
}

// SecretReader reads a secret by name (secretstore.Store).
type SecretReader interface {
	Get(ctx context.Context, name string) (map[string][]byte, error)
}

// Recorder counts deliveries (metrics.Metrics).
type Recorder interface {
	Notification(service, result string)
}

// Activities evaluate triggers and deliver notifications.
type Activities struct {
	cfg     ConfigSource
	secrets SecretReader
	rec     Recorder
	http    *http.Client
	log     *slog.Logger
	// apps mints GitHub App installation tokens.
	apps *ghapp.Tokens
}

// Option configures Activities.
type Option func(*Activities)

// WithHTTPClient sets the client of the HTTP services (default: a 30 s
// timeout).
func WithHTTPClient(c *http.Client) Option { return func(a *Activities) { a.http = c } }

// WithGitHubApps shares a GitHub App token cache (one per process); by
// default the activities keep their own.
func WithGitHubApps(t *ghapp.Tokens) Option { return func(a *Activities) { a.apps = t } }

// WithRecorder counts deliveries.
func WithRecorder(r Recorder) Option { return func(a *Activities) { a.rec = r } }

// New checks the dependencies.
func New(cfg ConfigSource, secrets SecretReader, log *slog.Logger, opts ...Option) (*Activities, error) {
	if cfg == nil || secrets == nil || log == nil {
		return nil, errors.New("notify: a config source, a secret reader and a logger are required")
	}
	a := &Activities{cfg: cfg, secrets: secrets, log: log, http: &http.Client{Timeout: 30 * time.Second}}
	for _, o := range opts {
		o(a)
	}
	if a.apps == nil {
		a.apps = ghapp.NewTokens()
	}
	return a, nil
}

// Register registers the activities under their names.
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.Evaluate, activity.RegisterOptions{Name: EvaluateName})
	r.RegisterActivityWithOptions(a.Deliver, activity.RegisterOptions{Name: DeliverName})
}

// EvaluateInput is an app's state and what it was last notified of.
type EvaluateInput struct {
	// AppKey is "<project>/<name>".
	AppKey             string            `json:"appKey"`
	App                notifications.App `json:"app"`
	ProjectAnnotations map[string]string `json:"projectAnnotations,omitempty"`
	State              map[string]string `json:"state,omitempty"`
	Epoch              int               `json:"epoch"`
}

// Evaluate returns the deliveries the app's state calls for. Without a
// configuration it returns none and keeps the state.
func (a *Activities) Evaluate(ctx context.Context, in EvaluateInput) (notifications.Plan, error) {
	c, err := a.cfg.Notifications(ctx)
	if err != nil {
		return notifications.Plan{}, fmt.Errorf("notifications config: %w", err)
	}
	if c == nil {
		return notifications.Plan{State: in.State, Off: true}, nil
	}
	return c.Evaluate(in.AppKey, in.App, in.ProjectAnnotations, in.State, in.Epoch), nil
}

// DeliverInput is one delivery and the app it is about.
type DeliverInput struct {
	Delivery notifications.Delivery `json:"delivery"`
	App      notifications.App      `json:"app"`
	// MaxAttempts is the retry policy's bound: the last attempt's failure
	// counts as failed rather than retried.
	MaxAttempts int32 `json:"maxAttempts,omitempty"`
}

// DeliverOutput says how many attempts the delivery took.
type DeliverOutput struct {
	Attempts int32 `json:"attempts"`
}

const (
	msgDelivered = "notification sent"
	msgFailed    = "notification failed"
)

// Deliver renders the delivery's template and sends it. The service's
// credentials are read from the secret store now and never returned.
func (a *Activities) Deliver(ctx context.Context, in DeliverInput) (DeliverOutput, error) {
	attempt := activity.GetInfo(ctx).Attempt
	d := in.Delivery
	err := a.deliver(ctx, in)
	log := a.log.With("app", d.App, "trigger", d.Trigger, "service", d.Service, "recipient", d.Recipient, "key", d.Key, "attempt", attempt)
	if err == nil {
		a.record(d.ServiceType, ResultSent)
		log.InfoContext(ctx, msgDelivered)
		return DeliverOutput{Attempts: attempt}, nil
	}
	log.WarnContext(ctx, msgFailed, "err", err.Error())
	if IsPermanent(err) || (in.MaxAttempts > 0 && attempt >= in.MaxAttempts) {
		a.record(d.ServiceType, ResultFailed)
		// The attempts go with the failure, for the history.
		return DeliverOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeDelivery, nil, DeliverOutput{Attempts: attempt})
	}
	a.record(d.ServiceType, ResultRetried)
	return DeliverOutput{}, err
}

func (a *Activities) record(service, result string) {
	if a.rec != nil {
		a.rec.Notification(service, result)
	}
}

func (a *Activities) deliver(ctx context.Context, in DeliverInput) error {
	d := in.Delivery
	c, err := a.cfg.Notifications(ctx)
	if err != nil {
		return fmt.Errorf("notifications config: %w", err)
	}
	if c == nil {
		return permanent("notifications are no longer configured")
	}
	svc, ok := c.Services[d.Service]
	if !ok {
		return permanent("service %s is no longer configured", d.Service)
	}
	tmpl, ok := c.Templates[d.Template]
	if !ok {
		return permanent("template %s is no longer configured", d.Template)
	}
	rendered, err := tmpl.Render(notifications.Vars{App: in.App, Context: c.Context, ServiceType: svc.Type, Recipient: d.Recipient})
	if err != nil {
		return permanent("template %s: %w", d.Template, err)
	}
	secret, err := a.secrets.Get(ctx, SecretName)
	if errors.Is(err, secretstore.ErrNotFound) {
		secret, err = nil, nil // a service without references needs none
	}
	if err != nil {
		return fmt.Errorf("read the notifications secret: %w", err)
	}
	m := message{d: d, app: in.App, t: rendered, secret: secret}
	switch svc.Type {
	case notifications.TypeWebhook:
		return a.sendWebhook(ctx, svc.Webhook, m)
	case notifications.TypeSlack:
		return a.sendSlack(ctx, svc.Slack, m)
	case notifications.TypeEmail:
		return a.sendEmail(ctx, svc.Email, m)
	case notifications.TypeGitHub:
		return a.sendGitHub(ctx, svc.GitHub, m)
	case notifications.TypeTeams:
		return a.sendTeams(ctx, svc.Teams, m)
	}
	return permanent("service type %s is not implemented", svc.Type)
}

var _ Recorder = (*metrics.Metrics)(nil)
