package customizations

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/health"
)

// Mirror serves the Set the workers published last, in a process that runs
// no worker (windlass server): its health and actions are then the
// workers', whatever source their flags or the settings give them. It
// follows the most recently loaded set among the published statuses, and
// keeps the one it has while no worker publishes. Before any set is found
// it has the built-in checks. It is safe for concurrent use.
type Mirror struct {
	store RedisStatuses
	log   *slog.Logger
	mu    sync.Mutex // serialises loads
	cur   atomic.Pointer[Set]
}

// NewMirror follows the statuses and sets in store.
func NewMirror(store RedisStatuses, log *slog.Logger) *Mirror {
	return &Mirror{store: store, log: log}
}

// Log messages.
const (
	msgMirrored     = "resource customizations taken from the workers"
	msgMirrorFailed = "resource customizations not taken from the workers; the last set stays"
)

// Load reads the published statuses and, when the newest set is not the
// one in use, reads and builds it. On failure the set in use stays.
func (m *Mirror) Load(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	sts, err := m.store.List(ctx)
	if err != nil {
		return err
	}
	var newest *WorkerStatus
	for i, st := range sts {
		if st.Digest != "" && (newest == nil || st.LoadedAt.After(newest.LoadedAt)) {
			newest = &sts[i]
		}
	}
	if newest == nil {
		return nil
	}
	if cur := m.cur.Load(); cur != nil && cur.Digest == newest.Digest {
		return nil
	}
	set, err := m.store.GetSet(ctx, newest.Digest)
	if err != nil {
		return err
	}
	m.cur.Store(set)
	m.log.Info(msgMirrored, "worker", newest.Worker, "source", newest.Source, "revision", set.Revision, "digest", set.Digest)
	return nil
}

// Run loads every interval until ctx ends.
func (m *Mirror) Run(ctx context.Context, every time.Duration) {
	tick(ctx, every, func() {
		if err := m.Load(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn(msgMirrorFailed, "error", err)
		}
	})
}

// Current returns the set in use, or nil before one was found.
func (m *Mirror) Current() *Set { return m.cur.Load() }

// Assess assesses health with the set in use, or with the built-in checks
// before one was found.
func (m *Mirror) Assess(obj *unstructured.Unstructured) health.Result {
	return assess(m.cur.Load(), obj)
}

// Actions returns the actions of the set in use.
func (m *Mirror) Actions() Actions { return Actions{m} }
