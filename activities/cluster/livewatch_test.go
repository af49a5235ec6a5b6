package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/kube"
)

// A wave's wait reads the objects' state from one watch per kind and
// namespace, started without a version (its first events are the current
// state), and lists nothing; a watch that ends is opened again from the
// last version it saw, and one whose version has expired, from the
// current state. The wait still sees the Deployment become available:
// its pod has no node to run on until the watches have done what the case
// is about, then the test lets it run.
func TestWaitWaveWatchesWithoutListing(t *testing.T) {
	fresh := func(ws []metav1.ListOptions) int {
		n := 0
		for _, w := range ws {
			if w.ResourceVersion == "" {
				n++
			}
		}
		return n
	}
	for _, tc := range []struct {
		name string
		// cut ends every watch after this many events (0: never).
		cut int
		// expire answers a watch opened from a version with "expired".
		expire bool
		// ready says when the watches have done what the case is about.
		ready func(watches []metav1.ListOptions, expired int) bool
	}{
		{name: "one watch per kind", ready: func(ws []metav1.ListOptions, _ int) bool { return len(ws) >= 3 }},
		{name: "watches that end are opened again", cut: 1, ready: func(ws []metav1.ListOptions, _ int) bool { return fresh(ws) < len(ws) }},
		{name: "an expired version starts from the current state", cut: 1, expire: true,
			ready: func(ws []metav1.ListOptions, expired int) bool { return expired > 0 && fresh(ws) > 3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, WithSettleWait(0)) // the wait, not the apply, waits
			rec := &watchRecorder{clusters: h.a.clusters.(clusters), cut: tc.cut, expire: tc.expire}
			h.a.clusters = rec
			tg := h.target("livewatch")
			objs := h.fixture("guestbook.yaml")
			for _, o := range objs {
				if o.GetKind() == "Deployment" {
					if err := unstructured.SetNestedStringMap(o.Object, map[string]string{"windlass.dev/no-such-node": "true"}, "spec", "template", "spec", "nodeSelector"); err != nil {
						t.Fatal(err)
					}
				}
			}
			in := WaveInput{Target: tg, Manifests: h.put(objs...), Operation: SyncOperation{SyncID: "w1"}, Step: Step{Phase: PhaseSync}}
			if out := must[WaveOutput](h, ApplyWaveName, in); out.Settled {
				t.Fatalf("the new Deployment's wave is settled by its apply: %+v", out)
			}
			rec.reset()
			// A wait that never sees the Deployment available fails here
			// rather than at the test binary's timeout.
			type result struct {
				out WaveOutput
				err error
			}
			done := make(chan result, 1)
			go func() {
				out, err := run[WaveOutput](h, WaitWaveName, in)
				done <- result{out, err}
			}()
			deadline := time.Now().Add(30 * time.Second)
			for !rec.seen(tc.ready) {
				if time.Now().After(deadline) {
					_, ws := rec.take()
					t.Fatalf("the watches did not get there: %d watches, %d of them without a version", len(ws), fresh(ws))
				}
				time.Sleep(20 * time.Millisecond)
			}
			unstick := []byte(`{"spec":{"template":{"spec":{"nodeSelector":null}}}}`)
			if _, err := h.kc.AppsV1().Deployments(h.ns).Patch(t.Context(), "guestbook-ui", types.MergePatchType, unstick, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			var out WaveOutput
			select {
			case r := <-done:
				if r.err != nil {
					t.Fatalf("wait: %v", r.err)
				}
				out = r.out
			case <-time.After(time.Minute):
				t.Fatal("the wait did not end in a minute")
			}
			if out.Health != appspec.HealthHealthy || len(out.Resources) != 3 {
				t.Fatalf("wait = %s, %+v", out.Health, out.Resources)
			}
			lists, watches := rec.take()
			if lists != 0 {
				t.Errorf("the wait listed %d times, want none", lists)
			}
			for _, w := range watches {
				if w.SendInitialEvents != nil || w.LabelSelector == "" {
					t.Errorf("watch options %+v: want a label selector and no streaming list", w)
				}
			}
			// A ConfigMap, a Service and a Deployment: three kinds, each
			// watched once while none of them ended.
			if n := fresh(watches); tc.cut == 0 && (len(watches) != 3 || n != 3) {
				t.Errorf("%d watches (%d without a version), want 3 without", len(watches), n)
			}
		})
	}
}

// watchRecorder counts the lists and records the watches of every
// resource, and can end each watch after cut events and answer a watch
// opened from a version with an expired-version error.
type watchRecorder struct {
	clusters
	cut    int
	expire bool
	// wrap, when set, wraps each watch opened (after cut).
	wrap    func(watch.Interface) watch.Interface
	mu      sync.Mutex
	lists   int
	watches []metav1.ListOptions
	expires int
}

func (r *watchRecorder) For(server string) (*kube.Clients, error) {
	c, err := r.clusters.For(server)
	if err != nil {
		return nil, err
	}
	cp := *c
	cp.Dynamic = recordedDynamic{Interface: c.Dynamic, r: r}
	return &cp, nil
}

func (r *watchRecorder) reset() { r.take() }

func (r *watchRecorder) take() (int, []metav1.ListOptions) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lists, watches := r.lists, r.watches
	r.lists, r.watches = 0, nil
	return lists, watches
}

// seen reports cond over the watches so far and the expired answers.
func (r *watchRecorder) seen(cond func([]metav1.ListOptions, int) bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return cond(r.watches, r.expires)
}

func (r *watchRecorder) list() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lists++
}

func (r *watchRecorder) watch(ctx context.Context, opts metav1.ListOptions, open func(context.Context, metav1.ListOptions) (watch.Interface, error)) (watch.Interface, error) {
	r.mu.Lock()
	r.watches = append(r.watches, opts)
	expire := r.expire && opts.ResourceVersion != ""
	if expire {
		r.expires++
	}
	r.mu.Unlock()
	if expire {
		st := apierrors.NewResourceExpired("too old resource version").ErrStatus
		return forward(watch.NewFake(), 1, watch.Event{Type: watch.Error, Object: &st}), nil
	}
	w, err := open(ctx, opts)
	if err != nil {
		return w, err
	}
	if r.cut != 0 {
		w = forward(w, r.cut)
	}
	if r.wrap != nil {
		w = r.wrap(w)
	}
	return w, nil
}

// forward is a watch that sends first, then at most n of w's events, and
// ends.
func forward(w watch.Interface, n int, first ...watch.Event) watch.Interface {
	return relay(w, func(send func(watch.Event) bool, stop <-chan struct{}) {
		for _, ev := range first {
			if !send(ev) {
				return
			}
		}
		if len(first) > 0 {
			return
		}
		for sent := 0; sent < n; {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok || !send(ev) {
					return
				}
				if ev.Type != watch.Bookmark {
					sent++
				}
			case <-stop:
				return
			}
		}
	})
}

// relay is a watch whose events body sends (send says false once the
// watch is stopped); it ends, and stops w, when body returns.
func relay(w watch.Interface, body func(send func(watch.Event) bool, stop <-chan struct{})) watch.Interface {
	out := make(chan watch.Event)
	pw := watch.NewProxyWatcher(out)
	go func() {
		defer close(out)
		defer w.Stop()
		body(func(ev watch.Event) bool {
			select {
			case out <- ev:
				return true
			case <-pw.StopChan():
				return false
			}
		}, pw.StopChan())
	}()
	return pw
}

type recordedDynamic struct {
	dynamic.Interface
	r *watchRecorder
}

func (d recordedDynamic) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return recordedResource{NamespaceableResourceInterface: d.Interface.Resource(gvr), r: d.r}
}

type recordedResource struct {
	dynamic.NamespaceableResourceInterface
	r *watchRecorder
}

// List and Watch of every namespace are recorded as a namespace's are.
func (l recordedResource) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return recordedNamespace{ResourceInterface: l.NamespaceableResourceInterface, r: l.r}.List(ctx, opts)
}

func (l recordedResource) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return recordedNamespace{ResourceInterface: l.NamespaceableResourceInterface, r: l.r}.Watch(ctx, opts)
}

func (l recordedResource) Namespace(ns string) dynamic.ResourceInterface {
	return recordedNamespace{ResourceInterface: l.NamespaceableResourceInterface.Namespace(ns), r: l.r}
}

type recordedNamespace struct {
	dynamic.ResourceInterface
	r *watchRecorder
}

func (n recordedNamespace) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	n.r.list()
	return n.ResourceInterface.List(ctx, opts)
}

func (n recordedNamespace) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return n.r.watch(ctx, opts, n.ResourceInterface.Watch)
}
