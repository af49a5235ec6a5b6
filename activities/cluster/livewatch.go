package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/windlass-cd/windlass/internal/kube"
)

// liveWatch follows the objects that carry a label in some kinds and
// namespaces, each (kind, namespace) with a single watch request and no
// list: a watch without a resourceVersion starts with the objects' state,
// as events, then sends their changes. That first state is the API
// server's watch cache's, which is not a consistent read: it can lag
// behind a write the caller has just made (the cache serves a watch
// without a resourceVersion at whatever version it has reached), so a
// caller that knows an object's applied state must not take an older one
// for it (notBefore). An informer lists first, and client-go's first tries a
// streaming list, which an API server without the WatchList feature (1.33
// by default) refuses: each informer cost three requests and their round
// trips where this costs one.
//
// It has no "synced" moment: an object whose first event has not come
// yet reads as absent. A wave's wait treats an absent object as pending,
// never as done, so it needs none; a wait for deletions does, and keeps
// watchSet.
type liveWatch struct {
	c        *kube.Clients
	selector string
	groups   map[watchKey]*liveGroup
	changed  chan struct{}
}

// liveGroup is one watch's objects, by namespace/name.
type liveGroup struct {
	mu   sync.Mutex
	objs map[string]*unstructured.Unstructured
}

func newLiveWatch(c *kube.Clients, selector string) *liveWatch {
	return &liveWatch{c: c, selector: selector, groups: map[watchKey]*liveGroup{}, changed: make(chan struct{}, 1)}
}

func (w *liveWatch) add(gvr schema.GroupVersionResource, namespaced bool, ns string) {
	if !namespaced {
		ns = metav1.NamespaceAll
	}
	k := watchKey{gvr: gvr, ns: ns}
	if _, ok := w.groups[k]; !ok {
		w.groups[k] = &liveGroup{objs: map[string]*unstructured.Unstructured{}}
	}
}

// start opens every watch (an error, say Forbidden, is returned) and
// follows them until ctx ends.
func (w *liveWatch) start(ctx context.Context) error {
	for k, g := range w.groups {
		wi, err := w.open(ctx, k, "")
		if err != nil {
			return fmt.Errorf("watch %s: %w", k.gvr.Resource, err)
		}
		go w.follow(ctx, k, g, wi)
	}
	return nil
}

func (w *liveWatch) open(ctx context.Context, k watchKey, rv string) (watch.Interface, error) {
	return w.c.Dynamic.Resource(k.gvr).Namespace(k.ns).Watch(ctx, metav1.ListOptions{
		LabelSelector: w.selector, ResourceVersion: rv, AllowWatchBookmarks: true,
	})
}

// reopenDelay is the pause before a watch that ended or failed is opened
// again.
const reopenDelay = 250 * time.Millisecond

// follow applies wi's events to g until ctx ends. A watch that ends (the
// server's timeout, a broken connection) is opened again from the last
// version seen; one whose version has expired, from the current state,
// which replaces g's objects.
func (w *liveWatch) follow(ctx context.Context, k watchKey, g *liveGroup, wi watch.Interface) {
	rv := ""
	for {
		var expired bool
		rv, expired = w.drain(g, wi, rv)
		wi.Stop()
		if expired {
			rv = ""
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(reopenDelay):
			}
			var err error
			if wi, err = w.open(ctx, k, rv); err == nil {
				break
			}
			if isExpired(err) {
				rv = ""
			}
		}
		if rv == "" {
			// The new watch starts with every object that exists now.
			g.mu.Lock()
			clear(g.objs)
			g.mu.Unlock()
		}
	}
}

// drain applies wi's events to g until wi ends, and returns the last
// resourceVersion seen and whether the watch ended because its version
// expired.
func (w *liveWatch) drain(g *liveGroup, wi watch.Interface, rv string) (string, bool) {
	for ev := range wi.ResultChan() {
		if ev.Type == watch.Error {
			return rv, isExpired(apierrors.FromObject(ev.Object))
		}
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		rv = u.GetResourceVersion()
		key := u.GetNamespace() + "/" + u.GetName()
		g.mu.Lock()
		switch ev.Type {
		case watch.Added, watch.Modified:
			g.objs[key] = u
		case watch.Deleted:
			delete(g.objs, key)
		}
		g.mu.Unlock()
		if ev.Type != watch.Bookmark {
			select {
			case w.changed <- struct{}{}:
			default:
			}
		}
	}
	return rv, false
}

// isExpired reports an error that says a watch's resourceVersion is too
// old to start from (410 Gone, reason Expired or Gone).
func isExpired(err error) bool {
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		return true
	}
	var st apierrors.APIStatus
	return errors.As(err, &st) && st.Status().Code == http.StatusGone
}

// get returns the watched object, or nil.
func (w *liveWatch) get(gvr schema.GroupVersionResource, namespaced bool, ns, name string) *unstructured.Unstructured {
	watchNS := metav1.NamespaceAll
	if namespaced {
		watchNS = ns
	} else {
		ns = ""
	}
	g, ok := w.groups[watchKey{gvr: gvr, ns: watchNS}]
	if !ok {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.objs[ns+"/"+name]
}
