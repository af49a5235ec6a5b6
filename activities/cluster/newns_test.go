package cluster

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// requestLog records the requests of the clients made from its config,
// as "METHOD path".
type requestLog struct {
	mu   sync.Mutex
	reqs []string
}

func (l *requestLog) config(base *rest.Config) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			l.mu.Lock()
			l.reqs = append(l.reqs, r.Method+" "+r.URL.Path)
			l.mu.Unlock()
			return rt.RoundTrip(r)
		})
	})
	return cfg
}

// take returns the requests recorded since the last take whose path
// contains part.
func (l *requestLog) take(part string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.reqs {
		if strings.Contains(r, part) {
			out = append(out, r)
		}
	}
	l.reqs = nil
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Before an app's first sync with CreateNamespace its destination
// namespace does not exist, and neither does anything in it: the compare
// reads the namespace instead of each object it did not list, and the
// apply that creates the namespace reads none of the objects it then
// creates. Where the namespace exists, both read the objects as before.
func TestNewNamespaceSparesObjectReads(t *testing.T) {
	var log requestLog
	h := newHarnessFor(t, log.config(bed.Cluster.Config))
	ns := h.ns + "-new"
	t.Cleanup(func() { _ = h.kc.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}) })
	objs := []*unstructured.Unstructured{configMap("a"), configMap("b"), configMap("c")}
	ref := h.put(objs...)
	// An app name of this run's own: the objects of an earlier run that
	// died before its cleanup would be this app's too.
	tg := h.target("fresh-namespace-"+h.ns[strings.LastIndexByte(h.ns, '-')+1:], "CreateNamespace=true")
	tg.Destination.Namespace = ns
	nsPath := "/api/v1/namespaces/" + ns
	cmGets := func(reqs []string) []string {
		var out []string
		for _, r := range reqs {
			if strings.HasPrefix(r, http.MethodGet+" "+nsPath+"/configmaps/") {
				out = append(out, r)
			}
		}
		return out
	}
	nsGets := func(reqs []string) int {
		return len(slices.DeleteFunc(slices.Clone(reqs), func(r string) bool { return r != http.MethodGet+" "+nsPath }))
	}

	// The first compare: one GET of the missing namespace, none of the
	// ConfigMaps, which are all Missing.
	c := h.compare(tg, ref, false)
	reqs := log.take(nsPath)
	if c.Sync != appspec.SyncOutOfSync || len(c.Resources) != 3 || slices.ContainsFunc(c.Resources, func(r appspec.ResourceStatus) bool { return r.Health != appspec.HealthMissing }) {
		t.Fatalf("compare before the namespace = %s %+v", c.Sync, c.Resources)
	}
	if got := cmGets(reqs); len(got) != 0 || nsGets(reqs) != 1 {
		t.Fatalf("compare before the namespace read %v, want one GET of the namespace and none of its ConfigMaps", reqs)
	}

	// The apply that creates the namespace creates the ConfigMaps
	// without reading them.
	in := WaveInput{Target: tg, Manifests: ref, Operation: SyncOperation{SyncID: "s1"}, Step: Step{Phase: PhaseSync}}
	got := must[WaveOutput](h, ApplyWaveName, in)
	reqs = log.take(nsPath)
	if acts := actions(got.Resources); len(acts) != 3 || slices.ContainsFunc(acts, func(a string) bool { return !strings.HasSuffix(a, "="+string(ActionCreated)) }) {
		t.Fatalf("actions = %v, want 3 created", acts)
	}
	if g := cmGets(reqs); len(g) != 0 {
		t.Fatalf("the apply that created the namespace read %v", g)
	}
	for _, o := range objs {
		if _, err := h.kc.CoreV1().ConfigMaps(ns).Get(t.Context(), o.GetName(), metav1.GetOptions{}); err != nil {
			t.Fatalf("ConfigMap %s: %v", o.GetName(), err)
		}
	}

	// Once the namespace exists, an apply reads each object again, and
	// finds them unchanged.
	got = must[WaveOutput](h, ApplyWaveName, in)
	reqs = log.take(nsPath)
	if acts := actions(got.Resources); len(acts) != 3 || slices.ContainsFunc(acts, func(a string) bool { return !strings.HasSuffix(a, "="+string(ActionUnchanged)) }) {
		t.Fatalf("actions = %v, want 3 unchanged", acts)
	}
	if g := cmGets(reqs); len(g) != 3 {
		t.Fatalf("the apply into the existing namespace read %v, want each ConfigMap", g)
	}

	// Objects missing from an existing namespace are read one by one.
	more := []*unstructured.Unstructured{configMap("d"), configMap("e")}
	for _, o := range more {
		o.SetNamespace(ns)
	}
	c = h.compare(tg, h.put(append(slices.Clone(objs), more...)...), false)
	reqs = log.take(nsPath)
	if st := fmt.Sprintf("%s %s", statusOf(c, "ConfigMap", "d").Health, statusOf(c, "ConfigMap", "e").Health); st != "Missing Missing" {
		t.Fatalf("compare with two more = %s", st)
	}
	if g := cmGets(reqs); len(g) != 2 {
		t.Fatalf("compare in the existing namespace read %v, want the two missing ConfigMaps", reqs)
	}
}
