package customizations

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/health"
)

// A Mirror assesses health and lists actions as the worker that published
// last does: it follows a newer worker's set, keeps its set while the
// published one is gone, and has the built-in checks before any.
func TestMirrorFollowsWorkers(t *testing.T) {
	store := testStore(t, testRedis(t))
	publish := func(worker string) Option {
		return WithReport(func(ctx context.Context, st Status, set *Set) {
			if err := store.Publish(ctx, worker, st, set, time.Minute); err != nil {
				t.Error(err)
			}
		})
	}
	m := NewMirror(store, slog.New(slog.DiscardHandler))
	if err := m.Load(t.Context()); err != nil || m.Current() != nil {
		t.Fatalf("no workers: %v, set %v", err, m.Current())
	}
	if r := m.Assess(widget()); r.Status != appspec.HealthHealthy {
		t.Fatalf("no workers: %+v, want the built-in Healthy", r)
	}

	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"example.com/Widget/health.lua":              `return {status = "Degraded", message = "tree says " .. obj.metadata.name}`,
		"example.com/Widget/actions/discovery.lua":   `return {poke = {}}`,
		"example.com/Widget/actions/poke/action.lua": `return obj`,
	})
	first := NewLibrary(health.Options{MaxInstructions: 5000}, nil, WithSource(Dir(dir), dir), publish("w1"))
	if err := first.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := m.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	same := func(want *Library, obj *unstructured.Unstructured) {
		t.Helper()
		if d := cmp.Diff(want.Assess(obj), m.Assess(obj)); d != "" {
			t.Errorf("health (-worker +mirror):\n%s", d)
		}
		wa, werr := want.Actions().List(obj)
		ma, merr := m.Actions().List(obj)
		if d := cmp.Diff(wa, ma); d != "" || (werr == nil) != (merr == nil) {
			t.Errorf("actions (-worker +mirror):\n%s\nerrors %v, %v", d, werr, merr)
		}
		if d := cmp.Diff(want.Current().Health.Snapshot(), m.Current().Health.Snapshot()); d != "" {
			t.Errorf("scripts and limits (-worker +mirror):\n%s", d)
		}
	}
	if r := m.Assess(widget()); r.Status != appspec.HealthDegraded || r.Message != "tree says w" {
		t.Errorf("mirror of w1: %+v, want the tree's Degraded", r)
	}
	same(first, widget())

	// A worker that loads later, with other scripts, is followed.
	second := NewLibrary(health.Options{Inline: map[string]string{"example.com/Widget": `return {status = "Suspended", message = "inline"}`}}, nil, publish("w2"))
	if err := second.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := m.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	if m.Current().Digest != second.Current().Digest || m.Current().Digest == first.Current().Digest {
		t.Fatalf("mirror digest %s; want w2's %s", m.Current().Digest, second.Current().Digest)
	}
	same(second, widget())

	// A newer status whose set is gone: an error, and the set stays.
	if err := store.Put(t.Context(), "w3", Status{Digest: "feed", LoadedAt: time.Now().Add(time.Hour)}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := m.Load(t.Context()); !errors.Is(err, ErrSetGone) {
		t.Fatalf("set gone: err = %v, want ErrSetGone", err)
	}
	same(second, widget())
}
