package cluster

import (
	"context"
	"time"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/healthlog"
)

// HealthRecorder records the health transitions that compares find, outside
// workflow history (healthlog.Store).
type HealthRecorder interface {
	Record(ctx context.Context, app string, health appspec.HealthStatus, resources []appspec.ResourceStatus, now time.Time) (int, error)
}

var _ HealthRecorder = (*healthlog.Store)(nil)

const msgHealthUnrecorded = "health transitions not recorded"

// WithHealthLog records each compare's app and resource health in r, which
// keeps their transitions and lastTransitionTime. Without it none are kept.
func WithHealthLog(r HealthRecorder) Option {
	return func(a *Activities) { a.healthLog = r }
}

// recordHealth records out's health for the app. A recorder that fails is
// logged: the compare's answer stands without it.
func (a *Activities) recordHealth(ctx context.Context, t Target, out CompareOutput) {
	if a.healthLog == nil || ctx.Err() != nil {
		return
	}
	if _, err := a.healthLog.Record(ctx, appName(t), out.Health, out.Resources, time.Now()); err != nil {
		a.log.Warn(msgHealthUnrecorded, "app", appName(t), "err", err)
	}
}
