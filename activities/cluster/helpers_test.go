package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// memLoader is an in-memory manifest cache: rendered objects by ref key.
type memLoader struct {
	mu    sync.Mutex
	n     int
	loads int
	objs  map[string][]*unstructured.Unstructured
}

func (l *memLoader) Load(_ context.Context, ref render.ManifestRef) ([]*unstructured.Unstructured, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.loads++
	objs, ok := l.objs[ref.Key]
	if !ok {
		return nil, fmt.Errorf("manifests %s not cached", ref.Key)
	}
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopy()
	}
	return out, nil
}

// loaded is how many times manifests were loaded.
func (l *memLoader) loaded() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.loads
}

func (l *memLoader) put(objs []*unstructured.Unstructured) render.ManifestRef {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.objs == nil {
		l.objs = map[string][]*unstructured.Unstructured{}
	}
	l.n++
	key := fmt.Sprintf("m%d", l.n)
	l.objs[key] = objs
	return render.ManifestRef{Key: key, SHA: key, Count: len(objs)}
}

// clusters serves the test bed's cluster and its discovery.
type clusters struct {
	*kube.Factory
	disc discovery.DiscoveryInterface
}

func (c clusters) ServerPreferredResources(string) ([]*metav1.APIResourceList, error) {
	return c.disc.ServerPreferredResources()
}

var _ ResourceDiscoverer = clusters{}

// harness is one test's activities, namespace and clients.
type harness struct {
	t      testing.TB
	a      *Activities
	env    *testsuite.TestActivityEnvironment
	loader *memLoader
	ns     string
	kc     kubernetes.Interface
	dyn    dynamic.Interface
}

func newHarness(t testing.TB, opts ...Option) *harness {
	t.Helper()
	return newHarnessFor(t, bed.Cluster.Config, opts...)
}

// newHarnessFor is newHarness whose activities reach the test bed with cfg.
func newHarnessFor(t testing.TB, cfg *rest.Config, opts ...Option) *harness {
	t.Helper()
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	loader := &memLoader{}
	a, err := New(loader, clusters{Factory: kube.NewFactory(cfg, kube.Options{QPS: 1000, Burst: 2000}), disc: disc}, slog.New(slog.DiscardHandler), opts...)
	if err != nil {
		t.Fatal(err)
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.SetTestTimeout(2 * time.Minute)
	a.Register(env)
	h := &harness{t: t, a: a, env: env, loader: loader, kc: kubernetes.NewForConfigOrDie(bed.Cluster.Config), dyn: dynamic.NewForConfigOrDie(bed.Cluster.Config)}
	h.ns = h.namespace()
	return h
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// namespace creates a namespace for the test and deletes it afterwards.
func (h *harness) namespace() string {
	h.t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	base := strings.Trim(nonName.ReplaceAllString(strings.ToLower(h.t.Name()), "-"), "-")
	name := fmt.Sprintf("%.40s-%s", base, hex.EncodeToString(b))
	_, err := h.kc.CoreV1().Namespaces().Create(h.t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		_ = h.kc.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

func (h *harness) target(app string, syncOptions ...string) Target {
	return Target{Project: "default", App: app, Destination: appspec.Destination{Server: appspec.InClusterServer, Namespace: h.ns}, SyncOptions: syncOptions}
}

// fixture parses a testdata file.
func (h *harness) fixture(name string) []*unstructured.Unstructured {
	h.t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		h.t.Fatal(err)
	}
	objs, err := manifest.Parse(name, data)
	if err != nil {
		h.t.Fatal(err)
	}
	return objs
}

func (h *harness) put(objs ...*unstructured.Unstructured) render.ManifestRef {
	return h.loader.put(objs)
}

// run executes an activity by name through the test environment.
func run[O any](h *harness, name string, in any) (O, error) {
	h.t.Helper()
	var out O
	val, err := h.env.ExecuteActivity(name, in)
	if err != nil {
		return out, err
	}
	if err := val.Get(&out); err != nil {
		h.t.Fatalf("decode %s output: %v", name, err)
	}
	return out, nil
}

func must[O any](h *harness, name string, in any) O {
	h.t.Helper()
	out, err := run[O](h, name, in)
	if err != nil {
		h.t.Fatalf("%s: %v", name, err)
	}
	return out
}

// syncResult is what a whole sync did, in order.
type syncResult struct {
	plan   PlanOutput
	log    []ResourceResult
	failed *WaveOutput
	pruned []ResourceResult
	// awaiting lists the resources Prune kept for approval.
	awaiting []appspec.ResourceKey
}

// sync drives a sync as the SyncWorkflow does: Plan, then ApplyWave and
// WaitWave per step, Prune after the Sync phase (or last), SyncFail steps
// and DeleteHooks on failure, DeleteHooks on success.
func (h *harness) sync(t Target, ref render.ManifestRef, op SyncOperation) syncResult {
	h.t.Helper()
	if op.SyncID == "" {
		op.SyncID = "sync/" + t.Project + "/" + t.App + "/" + h.t.Name()
	}
	var r syncResult
	r.plan = must[PlanOutput](h, PlanName, PlanInput{Target: t, Manifests: ref, Operation: op})
	prune := func(pass string) {
		out := must[PruneOutput](h, PruneName, PruneInput{Target: t, Manifests: ref, Operation: op, Pass: pass})
		r.pruned = append(r.pruned, out.Resources...)
		r.awaiting = append(r.awaiting, out.AwaitingApproval...)
	}
	early := ""
	if r.plan.PruneLastResources > 0 {
		early = PrunePassEarly
	}
	pruned := false
	for i, s := range r.plan.Steps {
		in := WaveInput{Target: t, Manifests: ref, Operation: op, Step: s}
		r.log = append(r.log, must[WaveOutput](h, ApplyWaveName, in).Resources...)
		w := must[WaveOutput](h, WaitWaveName, in)
		if w.Health == appspec.HealthDegraded {
			r.failed = &w
			for _, f := range r.plan.SyncFail {
				in := WaveInput{Target: t, Manifests: ref, Operation: op, Step: f}
				r.log = append(r.log, must[WaveOutput](h, ApplyWaveName, in).Resources...)
				r.log = append(r.log, must[WaveOutput](h, WaitWaveName, in).Resources...)
			}
			must[HookCleanupOutput](h, DeleteHooksName, HookCleanupInput{Target: t, SyncID: op.SyncID, Outcome: OutcomeFailed})
			return r
		}
		lastSync := s.Phase == PhaseSync && (i+1 == len(r.plan.Steps) || r.plan.Steps[i+1].Phase != PhaseSync)
		if lastSync && !r.plan.PruneLast {
			prune(early)
			pruned = true
		}
	}
	if !pruned {
		prune(early)
	}
	if early != "" {
		prune(PrunePassLast)
	}
	must[HookCleanupOutput](h, DeleteHooksName, HookCleanupInput{Target: t, SyncID: op.SyncID, Outcome: OutcomeSucceeded})
	return r
}

// synced syncs a fixture as app and returns its target and manifests.
func (h *harness) synced(app, fixture, syncID string) (Target, render.ManifestRef) {
	h.t.Helper()
	tg := h.target(app)
	ref := h.put(h.fixture(fixture)...)
	h.sync(tg, ref, SyncOperation{SyncID: syncID})
	return tg, ref
}

func (h *harness) compare(t Target, ref render.ManifestRef, withDiff bool) CompareOutput {
	h.t.Helper()
	return must[CompareOutput](h, CompareName, CompareInput{Target: t, Manifests: ref, WithDiff: withDiff})
}

var (
	gvrDeployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	gvrJobs        = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	gvrConfigMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvrServices    = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	schemaPods     = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
)

// get reads an object of the test namespace; nil when it does not exist.
func (h *harness) get(gvr schema.GroupVersionResource, name string) *unstructured.Unstructured {
	h.t.Helper()
	u, err := h.dyn.Resource(gvr).Namespace(h.ns).Get(h.t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return u
}

func (h *harness) list(gvr schema.GroupVersionResource) []unstructured.Unstructured {
	h.t.Helper()
	l, err := h.dyn.Resource(gvr).Namespace(h.ns).List(h.t.Context(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return l.Items
}

// eventually waits for cond with a deadline, watching no clock but cond.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// errorType returns the Temporal application error type of an activity
// error and whether it is non-retryable.
func errorType(err error) (string, bool) {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Type(), app.NonRetryable()
	}
	return "", false
}

// actions renders a log as "Kind/name=action" entries.
func actions(log []ResourceResult) []string {
	out := make([]string, len(log))
	for i, r := range log {
		out[i] = r.Kind + "/" + r.Name + "=" + string(r.Action)
	}
	return out
}
