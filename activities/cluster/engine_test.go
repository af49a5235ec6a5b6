package cluster

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/manifest"
)

func TestSyncGuestbook(t *testing.T) {
	h := newHarness(t)
	tg := h.target("guestbook")
	ref := h.put(h.fixture("guestbook.yaml")...)

	r := h.sync(tg, ref, SyncOperation{})
	if d := cmp.Diff([]Step{{Phase: PhaseSync, Wave: 0, Resources: 3}}, r.plan.Steps); d != "" {
		t.Fatalf("steps (-want +got):\n%s", d)
	}
	want := []string{"ConfigMap/guestbook-config=created", "Service/guestbook-ui=created", "Deployment/guestbook-ui=created"}
	if d := cmp.Diff(want, actions(r.log)); d != "" {
		t.Fatalf("log (-want +got):\n%s", d)
	}
	dep := h.get(gvrDeployments, "guestbook-ui")
	if !manifest.OwnedBy("default", "guestbook", dep) || dep.GetLabels()[manifest.AppLabel] != "default.guestbook" {
		t.Fatalf("deployment not tracked: %v %v", dep.GetAnnotations(), dep.GetLabels())
	}
	cmpOut := h.compare(tg, ref, true)
	if cmpOut.Sync != appspec.SyncSynced || cmpOut.Health != appspec.HealthHealthy {
		t.Fatalf("compare = %s/%s: %+v", cmpOut.Sync, cmpOut.Health, cmpOut.Resources)
	}
	for _, rs := range cmpOut.Resources {
		if rs.Diff != "" {
			t.Fatalf("%s has a diff while synced:\n%s", rs.String(), rs.Diff)
		}
	}

	again := h.sync(tg, ref, SyncOperation{SyncID: "second"})
	for _, r := range again.log {
		if r.Action != ActionUnchanged {
			t.Fatalf("second sync changed %s: %s", r.String(), r.Action)
		}
	}
}

func TestSyncHooksPreAndPost(t *testing.T) {
	h := newHarness(t)
	tg := h.target("hooks")
	ref := h.put(h.fixture("hooks.yaml")...)
	op := SyncOperation{SyncID: "sync/default/hooks/1"}

	r := h.sync(tg, ref, op)
	wantSteps := []Step{{PhasePreSync, 0, 1}, {PhaseSync, 0, 1}, {PhasePostSync, 0, 1}}
	if d := cmp.Diff(wantSteps, r.plan.Steps); d != "" {
		t.Fatalf("steps (-want +got):\n%s", d)
	}
	before := "before-" + manifestDigestName(h, "before-", op.SyncID, PhasePreSync)
	after := "after-" + manifestDigestName(h, "after-", op.SyncID, PhasePostSync)
	want := []string{"Job/" + before + "=created", "Deployment/web=created", "Job/" + after + "=created"}
	if d := cmp.Diff(want, actions(r.log)); d != "" {
		t.Fatalf("log (-want +got):\n%s", d)
	}
	// HookSucceeded: both hooks are gone after the sync.
	if jobs := h.list(gvrJobs); len(jobs) != 0 {
		t.Fatalf("hook jobs left: %d", len(jobs))
	}
	if h.get(gvrDeployments, "web") == nil {
		t.Fatal("deployment missing")
	}
}

// manifestDigestName is the suffix HookName gives a generateName hook.
func manifestDigestName(h *harness, gen, syncID, phase string) string {
	o := &unstructured.Unstructured{Object: map[string]any{}}
	o.SetGenerateName(gen)
	return strings.TrimPrefix(manifest.HookName(o, syncID, phase), gen)
}

func TestSyncWavesOrder(t *testing.T) {
	h := newHarness(t)
	tg := h.target("waves")
	ref := h.put(h.fixture("waves.yaml")...)

	r := h.sync(tg, ref, SyncOperation{SyncID: "waves-1"})
	wantSteps := []Step{{PhasePreSync, 0, 1}, {PhaseSync, 0, 2}, {PhaseSync, 1, 1}, {PhaseSync, 2, 1}, {PhaseSync, 3, 1}}
	if d := cmp.Diff(wantSteps, r.plan.Steps); d != "" {
		t.Fatalf("steps (-want +got):\n%s", d)
	}
	want := []string{"Job/migrate=created", "Service/backend=created", "Deployment/backend=created", "Job/seed=created", "Deployment/frontend=created", "Job/smoke=created"}
	if d := cmp.Diff(want, actions(r.log)); d != "" {
		t.Fatalf("log (-want +got):\n%s", d)
	}
	// The apiserver's creation times (second resolution) never go back.
	created := []time.Time{
		h.get(gvrJobs, "migrate").GetCreationTimestamp().Time,
		h.get(gvrDeployments, "backend").GetCreationTimestamp().Time,
		h.get(gvrJobs, "seed").GetCreationTimestamp().Time,
		h.get(gvrDeployments, "frontend").GetCreationTimestamp().Time,
	}
	if !slices.IsSortedFunc(created, func(a, b time.Time) int { return a.Compare(b) }) {
		t.Fatalf("creation times out of order: %v", created)
	}
	// smoke had HookSucceeded; migrate and seed keep BeforeHookCreation.
	if h.get(gvrJobs, "smoke") != nil || h.get(gvrJobs, "migrate") == nil {
		t.Fatal("hook delete policies not applied")
	}

	// A second sync deletes the previous migrate Job before creating it.
	old := h.get(gvrJobs, "migrate").GetUID()
	r2 := h.sync(tg, ref, SyncOperation{SyncID: "waves-2"})
	if !strings.Contains(r2.log[0].Message, "BeforeHookCreation") || h.get(gvrJobs, "migrate").GetUID() == old {
		t.Fatalf("migrate not recreated: %+v", r2.log[0])
	}
}

func TestHelmHooks(t *testing.T) {
	h := newHarness(t)
	tg := h.target("chart")
	ref := h.put(h.fixture("helm-hooks.yaml")...)

	r := h.sync(tg, ref, SyncOperation{SyncID: "helm-1"})
	wantSteps := []Step{{PhasePreSync, -5, 1}, {PhasePreSync, 0, 1}, {PhaseSync, 0, 1}, {PhasePostSync, 1, 1}}
	if d := cmp.Diff(wantSteps, r.plan.Steps); d != "" {
		t.Fatalf("steps (-want +got):\n%s", d)
	}
	if len(r.plan.Skipped) != 1 || r.plan.Skipped[0].Name != "chart-app-test-connection" || !strings.Contains(r.plan.Skipped[0].Message, "Helm hook test") {
		t.Fatalf("skipped = %+v", r.plan.Skipped)
	}
	want := []string{"Job/db-init=created", "Job/db-migrate=created", "Deployment/chart-app=created", "ConfigMap/chart-notes=created"}
	if d := cmp.Diff(want, actions(r.log)); d != "" {
		t.Fatalf("log (-want +got):\n%s", d)
	}
	// hook-succeeded deleted db-init; db-migrate (no policy) stays.
	if h.get(gvrJobs, "db-init") != nil || h.get(gvrJobs, "db-migrate") == nil {
		t.Fatal("helm delete policies not applied")
	}
	pods := h.list(schemaPods)
	for _, p := range pods {
		if p.GetName() == "chart-app-test-connection" {
			t.Fatal("the Helm test pod was applied")
		}
	}
}

func TestFailingHookRunsSyncFail(t *testing.T) {
	h := newHarness(t)
	tg := h.target("failing")
	ref := h.put(h.fixture("failing-hook.yaml")...)
	op := SyncOperation{SyncID: "fail-1"}

	r := h.sync(tg, ref, op)
	if r.failed == nil {
		t.Fatalf("sync did not fail: %v", actions(r.log))
	}
	if r.failed.Failed == nil || r.failed.Failed.Name != "broken-migration" || !strings.Contains(strings.ToLower(r.failed.Message), "backoff limit") {
		t.Fatalf("failed wave = %+v", r.failed)
	}
	if d := cmp.Diff([]Step{{PhaseSyncFail, 0, 1}}, r.plan.SyncFail); d != "" {
		t.Fatalf("SyncFail steps (-want +got):\n%s", d)
	}
	syncFail := "on-failure-" + manifestDigestName(h, "on-failure-", op.SyncID, PhaseSyncFail)
	want := []string{"Job/broken-migration=created", "Job/" + syncFail + "=created", "Job/" + syncFail + "=hook-succeeded"}
	if d := cmp.Diff(want, actions(r.log)); d != "" {
		t.Fatalf("log (-want +got):\n%s", d)
	}
	if h.get(gvrDeployments, "never-synced") != nil {
		t.Fatal("the Sync phase ran after a failed PreSync hook")
	}
	// The failed hook stays (BeforeHookCreation only) for inspection.
	if h.get(gvrJobs, "broken-migration") == nil {
		t.Fatal("failed hook deleted")
	}
}

func TestRetriedApplyWaveCreatesNoDuplicateHook(t *testing.T) {
	h := newHarness(t)
	tg := h.target("retry")
	ref := h.put(h.fixture("hooks.yaml")...)
	in := WaveInput{Target: tg, Manifests: ref, Operation: SyncOperation{SyncID: "retry-1"}, Step: Step{Phase: PhasePreSync}}

	first := must[WaveOutput](h, ApplyWaveName, in)
	second := must[WaveOutput](h, ApplyWaveName, in)
	if first.Resources[0].Name != second.Resources[0].Name || second.Resources[0].Action != ActionUnchanged {
		t.Fatalf("retry: first %+v, second %+v", first.Resources, second.Resources)
	}
	if jobs := h.list(gvrJobs); len(jobs) != 1 {
		t.Fatalf("%d hook jobs after a retried apply, want 1", len(jobs))
	}
	// Another sync makes another hook.
	in.Operation.SyncID = "retry-2"
	third := must[WaveOutput](h, ApplyWaveName, in)
	if third.Resources[0].Name == first.Resources[0].Name {
		t.Fatal("another sync reused the hook name")
	}
}

// TestApplyWaveSettled: ApplyWave says a wave is settled when every
// object, as its apply left it, is healthy or suspended (the sync then
// skips the wave's wait); a dry run and a hook never are, even with the
// settle wait (TestApplyWaveSettleWait), and leave the wait to WaitWave.
func TestApplyWaveSettled(t *testing.T) {
	h := newHarness(t)
	guestbook := h.fixture("guestbook.yaml")
	var plain []*unstructured.Unstructured // its ConfigMap and Service
	for _, o := range guestbook {
		if o.GetKind() != "Deployment" {
			plain = append(plain, o)
		}
	}
	refPlain, refGuestbook, refHooks := h.put(plain...), h.put(guestbook...), h.put(h.fixture("hooks.yaml")...)
	syncWave := Step{Phase: PhaseSync}
	for _, tc := range []struct {
		name      string
		app       string
		ref       render.ManifestRef
		op        SyncOperation
		step      Step
		waitFirst bool // wait for the wave once before this apply
		want      bool
	}{
		{"a ConfigMap and a Service created", "plain", refPlain, SyncOperation{SyncID: "p1"}, syncWave, false, true},
		{"a new Deployment, available within the settle wait", "guestbook", refGuestbook, SyncOperation{SyncID: "g1"}, syncWave, false, true},
		{"the same apply once it is available", "guestbook", refGuestbook, SyncOperation{SyncID: "g2"}, syncWave, true, true},
		{"a dry run", "plain", refPlain, SyncOperation{SyncID: "p2", DryRun: true}, syncWave, false, false},
		{"a hook", "hooks", refHooks, SyncOperation{SyncID: "h1"}, Step{Phase: PhasePreSync}, false, false},
	} {
		in := WaveInput{Target: h.target(tc.app), Manifests: tc.ref, Operation: tc.op, Step: tc.step}
		if tc.waitFirst {
			if w := must[WaveOutput](h, WaitWaveName, in); w.Health != appspec.HealthHealthy {
				t.Fatalf("%s: the wave waited for is %s", tc.name, w.Health)
			}
		}
		got := must[WaveOutput](h, ApplyWaveName, in)
		if got.Settled != tc.want || (tc.want && got.Health != appspec.HealthHealthy) {
			t.Errorf("%s: settled %v, health %q; want settled %v", tc.name, got.Settled, got.Health, tc.want)
		}
	}
}

// TestApplyWaveSettleWait: a wave that its apply did not leave healthy
// is watched for the settle wait, and is settled if it becomes healthy
// within it (a new Deployment whose pod starts); one that does not (a
// Deployment whose pod no node takes) is left to WaitWave.
func TestApplyWaveSettleWait(t *testing.T) {
	for _, tc := range []struct {
		name   string
		settle time.Duration
		stuck  bool
		want   bool
	}{
		{name: "a new Deployment settles within the wait", settle: DefaultSettleWait, want: true},
		{name: "without the wait it is not settled", settle: 0},
		{name: "a Deployment that does not become available", settle: time.Second, stuck: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, WithSettleWait(tc.settle))
			objs := h.fixture("guestbook.yaml")
			if tc.stuck {
				stuck(t, objs)
			}
			in := WaveInput{Target: h.target("settle"), Manifests: h.put(objs...), Operation: SyncOperation{SyncID: "s1"}, Step: Step{Phase: PhaseSync}}
			got := must[WaveOutput](h, ApplyWaveName, in)
			if got.Settled != tc.want || (tc.want && got.Health != appspec.HealthHealthy) {
				t.Fatalf("settled %v, health %q; want settled %v", got.Settled, got.Health, tc.want)
			}
			if !tc.want {
				return
			}
			dep, err := h.kc.AppsV1().Deployments(h.ns).Get(t.Context(), "guestbook-ui", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if dep.Status.AvailableReplicas < 1 {
				t.Errorf("settled, but the Deployment has %d available replicas", dep.Status.AvailableReplicas)
			}
		})
	}
}

// stuck makes the Deployments of objs wait for a node that no node is:
// they never become available.
func stuck(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			if err := unstructured.SetNestedStringMap(o.Object, map[string]string{"windlass.dev/no-such-node": "true"}, "spec", "template", "spec", "nodeSelector"); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestSettleFor: a sync's wait timeout (WaveInput.SettleMillis) bounds the
// settle wait; without one the worker's settle wait stands.
func TestSettleFor(t *testing.T) {
	for _, tc := range []struct {
		settle time.Duration
		millis int64
		want   time.Duration
	}{
		{settle: time.Minute, want: time.Minute},
		{settle: time.Minute, millis: 30_000, want: 30 * time.Second},
		{settle: time.Minute, millis: 300_000, want: time.Minute},
		{settle: 0, millis: 30_000, want: 0},
	} {
		a := &Activities{settleWait: tc.settle}
		if got := a.settleFor(WaveInput{SettleMillis: tc.millis}); got != tc.want {
			t.Errorf("settle wait %v, SettleMillis %d: %v, want %v", tc.settle, tc.millis, got, tc.want)
		}
	}
}

func TestWaitWaveResumesFromHeartbeat(t *testing.T) {
	h := newHarness(t)
	tg := h.target("resume")
	ref := h.put(h.fixture("waves.yaml")...)
	in := WaveInput{Target: tg, Manifests: ref, Operation: SyncOperation{SyncID: "resume-1"}, Step: Step{Phase: PhaseSync, Wave: 3}}
	// The worker died after seeing smoke complete; smoke has since been
	// deleted (a TTL, say). The resumed wait must not wait for it again.
	key := appspec.ResourceKey{Group: "batch", Kind: "Job", Namespace: h.ns, Name: "smoke"}
	h.env.SetHeartbeatDetails(waveProgress{Done: []string{key.String()}})
	out := must[WaveOutput](h, WaitWaveName, in)
	if out.Health != appspec.HealthHealthy || len(out.Resources) != 1 || out.Resources[0].Action != ActionHookSucceeded {
		t.Fatalf("resumed wait = %+v", out)
	}
}

func TestDeleteHooksTerminated(t *testing.T) {
	h := newHarness(t)
	tg := h.target("term")
	pod := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"generateName": "long-", "annotations": map[string]any{manifest.HookAnnotation: "Sync"}},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "registry.k8s.io/pause:3.10"}}},
	}}
	ref := h.put(pod)
	op := SyncOperation{SyncID: "term-1"}
	must[WaveOutput](h, ApplyWaveName, WaveInput{Target: tg, Manifests: ref, Operation: op, Step: Step{Phase: PhaseSync}})
	if n := len(h.list(schemaPods)); n != 1 {
		t.Fatalf("%d pods", n)
	}
	// A succeeded outcome leaves a running hook without HookSucceeded alone.
	out := must[HookCleanupOutput](h, DeleteHooksName, HookCleanupInput{Target: tg, SyncID: op.SyncID, Outcome: OutcomeSucceeded})
	if len(out.Resources) != 0 {
		t.Fatalf("deleted on success: %+v", out.Resources)
	}
	for range 2 { // idempotent
		out = must[HookCleanupOutput](h, DeleteHooksName, HookCleanupInput{Target: tg, SyncID: op.SyncID, Outcome: OutcomeTerminated})
	}
	h.eventually("hook pod deleted", func() bool {
		for _, p := range h.list(schemaPods) {
			if p.GetDeletionTimestamp() == nil {
				return false
			}
		}
		return true
	})
}

func TestPrune(t *testing.T) {
	h := newHarness(t)
	tg := h.target("prune")
	base := h.fixture("guestbook.yaml")
	extra := h.fixture("guestbook.yaml")[2] // a second deployment
	extra.SetName("old")
	keep := extra.DeepCopy()
	keep.SetName("keep")
	keep.SetAnnotations(map[string]string{manifest.SyncOptionsAnnotation: "Prune=false"})
	ignored := base[0].DeepCopy()
	ignored.SetName("ignored-extra")
	ignored.SetAnnotations(map[string]string{manifest.CompareOptionsAnnotation: "IgnoreExtraneous", manifest.SyncWaveAnnotation: "5"})
	full := h.put(append(slices.Clone(base), extra, keep, ignored)...)
	h.sync(tg, full, SyncOperation{SyncID: "p1"})

	slim := h.put(base...)
	c := h.compare(tg, slim, true)
	var requires []string
	for _, rs := range c.Resources {
		if rs.RequiresPruning {
			requires = append(requires, rs.Kind+"/"+rs.Name)
			if rs.Diff == "" || !strings.HasPrefix(rs.Diff, "--- live") {
				t.Fatalf("no diff for extraneous %s", rs.Name)
			}
		}
	}
	if d := cmp.Diff([]string{"ConfigMap/ignored-extra", "Deployment/keep", "Deployment/old"}, requires); d != "" || c.Sync != appspec.SyncOutOfSync {
		t.Fatalf("requires pruning (-want +got):\n%s (sync %s)", d, c.Sync)
	}

	// Without prune, nothing is deleted. The plan does not look for the
	// candidates (that lists every kind); Prune, were it called, notes them.
	noPrune := h.sync(tg, slim, SyncOperation{SyncID: "p2"})
	if noPrune.plan.Prune != 0 || len(noPrune.pruned) != 3 || noPrune.pruned[0].Message != noteRequiresPruning {
		t.Fatalf("sync without prune: plan %d, %+v", noPrune.plan.Prune, noPrune.pruned)
	}
	r := h.sync(tg, slim, SyncOperation{SyncID: "p3", Prune: true})
	// Reverse order: wave 5 first, then Deployments by reverse name.
	want := []string{"ConfigMap/ignored-extra=pruned", "Deployment/old=pruned", "Deployment/keep=prune-skipped"}
	if d := cmp.Diff(want, actions(r.pruned)); d != "" {
		t.Fatalf("prune (-want +got):\n%s", d)
	}
	h.eventually("old deployment gone", func() bool { return h.get(gvrDeployments, "old") == nil })
	if h.get(gvrDeployments, "keep") == nil {
		t.Fatal("Prune=false resource deleted")
	}
	// With keep the only extraneous one... still OutOfSync; with only an
	// IgnoreExtraneous extra the app is Synced.
	onlyKeep := h.put(append(slices.Clone(base), keep)...)
	h.sync(tg, onlyKeep, SyncOperation{SyncID: "p4"})
	c = h.compare(tg, onlyKeep, false)
	if c.Sync != appspec.SyncSynced {
		t.Fatalf("sync = %s: %+v", c.Sync, c.Resources)
	}
}

func TestPruneIgnoresUntrackedAndOtherApps(t *testing.T) {
	h := newHarness(t)
	mine := h.target("mine")
	theirs := h.target("theirs")
	cm := h.fixture("guestbook.yaml")[0]
	h.sync(theirs, h.put(cm), SyncOperation{SyncID: "t1"})
	// A copy of the tracking annotation on another object proves nothing.
	copied := cm.DeepCopy()
	copied.SetName("copied")
	manifest.SetTracking("default", "mine", cm) // names guestbook-config
	copied.SetAnnotations(map[string]string{manifest.TrackingAnnotation: cm.GetAnnotations()[manifest.TrackingAnnotation]})
	copied.SetLabels(map[string]string{manifest.AppLabel: "default.mine"})
	copied.SetNamespace(h.ns)
	if _, err := h.dyn.Resource(gvrConfigMaps).Namespace(h.ns).Create(t.Context(), copied, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := h.sync(mine, h.put(), SyncOperation{SyncID: "m1", Prune: true})
	if r.plan.Prune != 0 || len(r.pruned) != 0 {
		t.Fatalf("pruned objects of others: %+v", r.pruned)
	}
}

func TestSharedResource(t *testing.T) {
	h := newHarness(t)
	cm := h.fixture("guestbook.yaml")[0]
	ref := h.put(cm)
	h.sync(h.target("first"), ref, SyncOperation{SyncID: "a"})

	strict := h.target("second", "FailOnSharedResource=true")
	in := WaveInput{Target: strict, Manifests: ref, Operation: SyncOperation{SyncID: "b"}, Step: Step{Phase: PhaseSync}}
	_, err := run[WaveOutput](h, ApplyWaveName, in)
	if typ, nonRetryable := errorType(err); typ != "SharedResource" || !nonRetryable || !strings.Contains(err.Error(), "default/first") {
		t.Fatalf("error = %v (type %q)", err, typ)
	}
	c := h.compare(strict, ref, false)
	if !strings.Contains(c.Resources[0].Message, "also tracked by app default/first") {
		t.Fatalf("compare message = %q", c.Resources[0].Message)
	}

	lax := h.target("second")
	out := must[WaveOutput](h, ApplyWaveName, WaveInput{Target: lax, Manifests: ref, Operation: SyncOperation{SyncID: "c"}, Step: Step{Phase: PhaseSync}})
	if !strings.Contains(out.Resources[0].Message, "shared resource") {
		t.Fatalf("result = %+v", out.Resources[0])
	}
	if got := manifest.OwnerApp(h.get(gvrConfigMaps, "guestbook-config")); got != "default/second" {
		t.Fatalf("owner = %q", got)
	}
}

func TestDiffAndIgnoreDifferences(t *testing.T) {
	h := newHarness(t)
	tg, ref := h.synced("drift", "guestbook.yaml", "d1")
	// Someone scales the deployment (another field manager).
	patch := []byte(`{"spec":{"replicas":3}}`)
	if _, err := h.dyn.Resource(gvrDeployments).Namespace(h.ns).Patch(t.Context(), "guestbook-ui", "application/merge-patch+json", patch, metav1.PatchOptions{FieldManager: "kubectl-scale"}); err != nil {
		t.Fatal(err)
	}
	c := h.compare(tg, ref, true)
	dep := statusOf(c, "Deployment", "guestbook-ui")
	if c.Sync != appspec.SyncOutOfSync || dep.Status != appspec.SyncOutOfSync || !strings.Contains(dep.Diff, "-  replicas: 3") || !strings.Contains(dep.Diff, "+  replicas: 1") {
		t.Fatalf("compare = %s, deployment %s, diff:\n%s", c.Sync, dep.Status, dep.Diff)
	}
	if c2 := h.compare(tg, ref, false); statusOf(c2, "Deployment", "guestbook-ui").Diff != "" {
		t.Fatal("a diff without WithDiff")
	}

	rules := map[string]appspec.ResourceIgnoreDifferences{
		"json pointer":   {Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}},
		"jq":             {Group: "apps", Kind: "Deployment", Name: "guestbook-*", JQPathExpressions: []string{".spec.replicas"}},
		"fields manager": {Group: "*", Kind: "Deployment", ManagedFieldsManagers: []string{"kubectl-scale"}},
	}
	for name, rule := range rules {
		t.Run(name, func(t *testing.T) {
			ig := tg
			ig.IgnoreDifferences = []appspec.ResourceIgnoreDifferences{rule}
			if c := h.compare(ig, ref, true); c.Sync != appspec.SyncSynced {
				t.Fatalf("compare with %s = %s:\n%s", name, c.Sync, statusOf(c, "Deployment", "guestbook-ui").Diff)
			}
		})
	}
	// A system-wide rule does the same.
	hs := *h
	hs.a, _ = New(h.loader, h.a.clusters, h.a.log, WithIgnoreDifferences(rules["json pointer"]))
	if c, err := hs.a.Compare(t.Context(), CompareInput{Target: tg, Manifests: ref}); err != nil || c.Sync != appspec.SyncSynced {
		t.Fatalf("system-wide rule: %s, %v", c.Sync, err)
	}

	// RespectIgnoreDifferences keeps the live replicas on apply.
	respect := h.target("drift", "RespectIgnoreDifferences=true")
	respect.IgnoreDifferences = []appspec.ResourceIgnoreDifferences{rules["json pointer"]}
	h.sync(respect, ref, SyncOperation{SyncID: "d2"})
	if n, _, _ := unstructured.NestedInt64(h.get(gvrDeployments, "guestbook-ui").Object, "spec", "replicas"); n != 3 {
		t.Fatalf("replicas = %d after RespectIgnoreDifferences, want 3", n)
	}
	// Without it, the sync restores 1.
	h.sync(tg, ref, SyncOperation{SyncID: "d3"})
	if n, _, _ := unstructured.NestedInt64(h.get(gvrDeployments, "guestbook-ui").Object, "spec", "replicas"); n != 1 {
		t.Fatalf("replicas = %d after sync, want 1", n)
	}
}

func statusOf(c CompareOutput, kind, name string) appspec.ResourceStatus {
	for _, rs := range c.Resources {
		if rs.Kind == kind && rs.Name == name {
			return rs
		}
	}
	return appspec.ResourceStatus{}
}

func TestCompareWhenDryRunCannotWork(t *testing.T) {
	h := newHarness(t)
	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.windlass.dev/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"},
	}}
	cm := h.fixture("guestbook.yaml")[0]
	tg := h.target("nocrd")
	c := h.compare(tg, h.put(cm, widget), true)
	w := statusOf(c, "Widget", "w")
	if c.Sync != appspec.SyncOutOfSync || w.Status != appspec.SyncOutOfSync || w.Health != appspec.HealthMissing || !strings.Contains(w.Message, "not served") || w.Diff == "" {
		t.Fatalf("compare = %s, widget %+v", c.Sync, w)
	}
	// The plan refuses an unknown kind that no CRD in the manifests defines.
	_, err := run[PlanOutput](h, PlanName, PlanInput{Target: tg, Manifests: h.put(cm, widget)})
	if typ, nonRetryable := errorType(err); typ != "UnknownKind" || !nonRetryable {
		t.Fatalf("plan error = %v", err)
	}

	// A namespace that CreateNamespace will create does not exist yet.
	ns := h.ns + "-new"
	missing := h.target("newns", "CreateNamespace=true")
	missing.Destination.Namespace = ns
	missing.ManagedNamespaceMetadata = &appspec.ManagedNamespaceMetadata{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"owner": "windlass"}}
	ref := h.put(cm)
	c = h.compare(missing, ref, false)
	if c.Sync != appspec.SyncOutOfSync || c.Resources[0].Health != appspec.HealthMissing {
		t.Fatalf("compare in a missing namespace = %+v", c)
	}
	t.Cleanup(func() { _ = h.kc.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}) })
	h.sync(missing, ref, SyncOperation{SyncID: "n1"})
	got, err := h.kc.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil || got.Labels["team"] != "a" || got.Annotations["owner"] != "windlass" {
		t.Fatalf("namespace = %v, %v", got, err)
	}
	if c := h.compare(missing, ref, false); c.Resources[0].Health != appspec.HealthHealthy {
		t.Fatalf("after sync: %+v", c.Resources)
	}
}

func TestPlanForbiddenByProject(t *testing.T) {
	h := newHarness(t)
	tg := h.target("forbidden")
	ref := h.put(h.fixture("waves.yaml")...)
	project := appspec.Project{
		Name:                       "restricted",
		Destinations:               []appspec.ProjectDestination{{Server: "*", Namespace: "*"}},
		NamespaceResourceWhitelist: []appspec.GroupKind{{Group: "apps", Kind: "Deployment"}, {Group: "", Kind: "Service"}},
	}
	_, err := run[PlanOutput](h, PlanName, PlanInput{Target: tg, Manifests: ref, Project: &project})
	typ, nonRetryable := errorType(err)
	if typ != "ResourceForbidden" || !nonRetryable {
		t.Fatalf("error = %v (type %q)", err, typ)
	}
	for _, name := range []string{"Job " + h.ns + "/migrate", "Job " + h.ns + "/seed", "Job " + h.ns + "/smoke"} {
		if !strings.Contains(err.Error(), name) {
			t.Fatalf("error %q does not name %s", err, name)
		}
	}
	if len(h.list(gvrJobs))+len(h.list(gvrDeployments)) != 0 {
		t.Fatal("a forbidden plan touched the cluster")
	}
}

func TestSelectiveSyncAndApplyStrategy(t *testing.T) {
	h := newHarness(t)
	tg := h.target("selective")
	ref := h.put(h.fixture("waves.yaml")...)
	op := SyncOperation{SyncID: "s1", Resources: []appspec.ResourceKey{{Group: "apps", Kind: "Deployment", Name: "frontend"}}}
	r := h.sync(tg, ref, op)
	if d := cmp.Diff([]string{"Deployment/frontend=created"}, actions(r.log)); d != "" {
		t.Fatalf("selective log (-want +got):\n%s", d)
	}
	if len(r.plan.Skipped) != 3 || r.plan.Skipped[0].Message != "hooks are not run in a selective sync" {
		t.Fatalf("skipped hooks = %+v", r.plan.Skipped)
	}
	r = h.sync(tg, ref, SyncOperation{SyncID: "s2", Strategy: StrategyApply, DryRun: true})
	if d := cmp.Diff([]Step{{PhaseSync, 0, 2}, {PhaseSync, 2, 1}}, r.plan.Steps); d != "" {
		t.Fatalf("apply strategy steps (-want +got):\n%s", d)
	}
	if h.get(gvrDeployments, "backend") != nil {
		t.Fatal("a dry run created backend")
	}
}

func TestDeleteAppForeground(t *testing.T) {
	h := newHarness(t)
	tg := h.target("doomed")
	objs := h.fixture("guestbook.yaml")
	post := h.fixture("hooks.yaml")[2].DeepCopy() // a Job
	post.SetGenerateName("")
	post.SetName("goodbye")
	post.SetAnnotations(map[string]string{manifest.HookAnnotation: "PostDelete", manifest.HookDeletePolicyAnnotation: "HookSucceeded"})
	ref := h.put(append(objs, post)...)
	r := h.sync(tg, ref, SyncOperation{SyncID: "x1"})
	if len(r.log) != 3 {
		t.Fatalf("the PostDelete hook ran during the sync: %v", actions(r.log))
	}
	out := must[DeleteAppOutput](h, DeleteAppName, DeleteAppInput{Target: tg, Cascade: CascadeForeground, Manifests: &ref})
	if out.Failed != nil {
		t.Fatalf("delete failed: %s", out.Message)
	}
	if h.get(gvrDeployments, "guestbook-ui") != nil || h.get(gvrServices, "guestbook-ui") != nil || h.get(gvrConfigMaps, "guestbook-config") != nil {
		t.Fatal("resources left after a foreground delete")
	}
	var got []string
	for _, r := range out.Resources {
		got = append(got, r.Kind+"/"+r.Name+"="+string(r.Action))
	}
	want := []string{"Deployment/guestbook-ui=deleted", "Service/guestbook-ui=deleted", "ConfigMap/guestbook-config=deleted",
		"Job/goodbye=created", "Job/goodbye=hook-succeeded", "Job/goodbye=deleted"}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("delete log (-want +got):\n%s", d)
	}
}

func TestDeleteAppOrphan(t *testing.T) {
	h := newHarness(t)
	tg, _ := h.synced("orphans", "guestbook.yaml", "o1")
	out := must[DeleteAppOutput](h, DeleteAppName, DeleteAppInput{Target: tg, Cascade: CascadeOrphan})
	if len(out.Resources) != 3 || out.Resources[0].Action != ActionOrphaned {
		t.Fatalf("orphan = %+v", out.Resources)
	}
	dep := h.get(gvrDeployments, "guestbook-ui")
	if dep == nil || manifest.OwnerApp(dep) != "" || dep.GetLabels()[manifest.AppLabel] != "" {
		t.Fatalf("orphaned deployment = %v", dep)
	}
}

func TestResourceTree(t *testing.T) {
	h := newHarness(t)
	tg, ref := h.synced("tree", "guestbook.yaml", "t1")
	out := must[ResourceTreeOutput](h, ResourceTreeName, ResourceTreeInput{Target: tg, Manifests: &ref})
	kinds := map[string]int{}
	byUID := map[string]ResourceNode{}
	for _, n := range out.Nodes {
		kinds[n.Kind]++
		byUID[n.UID] = n
	}
	if kinds["Deployment"] != 1 || kinds["ReplicaSet"] != 1 || kinds["Pod"] != 1 || kinds["Service"] != 1 {
		t.Fatalf("tree kinds = %v", kinds)
	}
	for _, n := range out.Nodes {
		if n.Kind == "Pod" && byUID[n.Parents[0]].Kind != "ReplicaSet" {
			t.Fatalf("pod parent = %+v", byUID[n.Parents[0]])
		}
	}
	small := must[ResourceTreeOutput](h, ResourceTreeName, ResourceTreeInput{Target: tg, MaxNodes: 2})
	if len(small.Nodes) != 2 || !small.Truncated {
		t.Fatalf("bounded tree = %d nodes, truncated %v", len(small.Nodes), small.Truncated)
	}
}

func TestCRDAndResourceInOneWave(t *testing.T) {
	h := newHarness(t)
	tg := h.target("crd")
	ref := h.put(h.fixture("crd.yaml")...)
	t.Cleanup(func() {
		_ = h.dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
			Delete(context.Background(), "gadgets.h7.windlass.dev", metav1.DeleteOptions{})
	})
	before := h.compare(tg, ref, false)
	if g := statusOf(before, "Gadget", "g1"); g.Health != appspec.HealthMissing || !strings.Contains(g.Message, "not served yet") {
		t.Fatalf("gadget before sync = %+v", g)
	}
	r := h.sync(tg, ref, SyncOperation{SyncID: "crd-1"})
	if d := cmp.Diff([]string{"CustomResourceDefinition/gadgets.h7.windlass.dev=created", "Gadget/g1=created"}, actions(r.log)); d != "" {
		t.Fatalf("log (-want +got):\n%s", d)
	}
	if c := h.compare(tg, ref, true); c.Sync != appspec.SyncSynced {
		t.Fatalf("after sync: %s %+v", c.Sync, c.Resources)
	}
}

// A worker sweeps every kind of a cluster once per fullSweepEvery for all
// its apps; a compare lists the manifests' kinds, the kinds seen for the
// app and the kinds the last sweep found for it. A resource that left the
// manifests is found either way (its kind was seen); a resource of a kind
// the app never had is found at the next sweep, or at once by a compare
// with diffs.
func TestCompareSweepsEveryKindPeriodically(t *testing.T) {
	h := newHarness(t)
	tg := h.target("sweep")
	objs := h.fixture("guestbook.yaml") // ConfigMap, Deployment, Service
	h.sync(tg, h.put(objs...), SyncOperation{})
	h.compare(tg, h.put(objs...), false) // the first compare sweeps the cluster

	// The Service leaves the manifests: found without a sweep.
	var kept []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() != "Service" {
			kept = append(kept, o)
		}
	}
	pruning := func(out CompareOutput) []string {
		var kinds []string
		for _, rs := range out.Resources {
			if rs.RequiresPruning {
				kinds = append(kinds, rs.Kind)
			}
		}
		return kinds
	}
	ref := h.put(kept...)
	if got := pruning(h.compare(tg, ref, false)); !slices.Equal(got, []string{"Service"}) {
		t.Fatalf("requires pruning = %v, want the Service", got)
	}

	// A Secret labelled for the app by hand: a kind the app never had.
	secret := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "by-hand", "namespace": h.ns}}}
	manifest.SetTracking(tg.Project, tg.App, secret)
	if _, err := h.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(h.ns).
		Create(t.Context(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := pruning(h.compare(tg, ref, false)); !slices.Equal(got, []string{"Service"}) {
		t.Fatalf("between sweeps, requires pruning = %v, want the Service only", got)
	}
	if got := pruning(h.compare(tg, ref, true)); !slices.Contains(got, "Secret") {
		t.Fatalf("a compare with diffs (a full sweep) found %v, want the Secret too", got)
	}
	h.a.kinds.serverSweep(tg.Destination.Server).at = time.Now().Add(-fullSweepEvery)
	h.a.kinds.seen = map[string]map[schema.GroupResource]kindRef{} // as on another worker
	if got := pruning(h.compare(tg, ref, false)); !slices.Contains(got, "Secret") || !slices.Contains(got, "Service") {
		t.Fatalf("at the sweep, requires pruning = %v, want the Secret and the Service", got)
	}
	// The sweep serves the compares that follow within the period, of
	// this app or any other of the cluster.
	at := h.a.kinds.serverSweep(tg.Destination.Server).at
	h.compare(h.target("sweep-other"), h.put(objs[0]), false)
	h.compare(tg, ref, false)
	if again := h.a.kinds.serverSweep(tg.Destination.Server).at; !again.Equal(at) {
		t.Fatalf("the cluster was swept again within the period (%v, then %v)", at, again)
	}
}

// A kind that cannot be listed (an aggregated API that is down) does not
// fail the compares of its cluster: the sweep warns, keeps what it has,
// and is tried again after sweepRetry; the compare lists the kinds it
// knows for the app.
func TestSweepSurvivesAKindThatCannotBeListed(t *testing.T) {
	h := newHarness(t)
	tg := h.target("sweep-broken")
	objs := h.fixture("guestbook.yaml")
	h.sync(tg, h.put(objs...), SyncOperation{})
	// Then an aggregated API goes down.
	broken := schema.GroupVersionResource{Group: "metrics.example.com", Version: "v1", Resource: "things"}
	h.a.clusters = brokenKind{clusters: h.a.clusters.(clusters), gvr: broken}
	h.a.kinds.discovery = map[string]discovered{}
	out, err := run[CompareOutput](h, CompareName, CompareInput{Target: tg, Manifests: h.put(objs...)})
	if err != nil {
		t.Fatalf("compare with a kind that cannot be listed: %v", err)
	}
	if out.Sync != appspec.SyncSynced || len(out.Resources) != len(objs) {
		t.Fatalf("compare = %s with %d resources, want Synced with %d", out.Sync, len(out.Resources), len(objs))
	}
	s := h.a.kinds.serverSweep(tg.Destination.Server)
	if due := s.at.Add(fullSweepEvery); time.Until(due) > sweepRetry {
		t.Fatalf("the failed sweep is next tried in %s, want within %s", time.Until(due), sweepRetry)
	}
	// A compare with diffs lists every kind: it reports the failure.
	if _, err := run[CompareOutput](h, CompareName, CompareInput{Target: tg, Manifests: h.put(objs...), WithDiff: true}); err == nil ||
		!strings.Contains(err.Error(), "metrics.example.com") {
		t.Fatalf("compare with diffs = %v, want the failed list named", err)
	}
}

// brokenKind adds to the cluster's discovery a kind whose list fails as an
// aggregated API that is down answers.
type brokenKind struct {
	clusters
	gvr schema.GroupVersionResource
}

func (b brokenKind) For(server string) (*kube.Clients, error) {
	c, err := b.clusters.For(server)
	if err != nil {
		return nil, err
	}
	cp := *c
	cp.Dynamic = failingDynamic{Interface: c.Dynamic, gvr: b.gvr}
	cp.Metadata = failingMetadata{Interface: c.Metadata, gvr: b.gvr, err: errUnavailable}
	return &cp, nil
}

func (b brokenKind) ServerPreferredResources(server string) ([]*metav1.APIResourceList, error) {
	lists, err := b.clusters.ServerPreferredResources(server)
	return append(lists, &metav1.APIResourceList{GroupVersion: b.gvr.GroupVersion().String(), APIResources: []metav1.APIResource{
		{Name: b.gvr.Resource, Kind: "Thing", Namespaced: true, Verbs: metav1.Verbs{"get", "list", "watch", "delete"}},
	}}), err
}

type failingDynamic struct {
	dynamic.Interface
	gvr schema.GroupVersionResource
}

func (f failingDynamic) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	r := f.Interface.Resource(gvr)
	if gvr == f.gvr {
		return failingList{r}
	}
	return r
}

type failingList struct {
	dynamic.NamespaceableResourceInterface
}

func (failingList) List(context.Context, metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return nil, errUnavailable
}

var errUnavailable = apierrors.NewServiceUnavailable("the server is currently unable to handle the request (metrics.example.com/v1)")

// failingMetadata's lists of gvr fail with err.
type failingMetadata struct {
	metadata.Interface
	gvr schema.GroupVersionResource
	err error
}

func (f failingMetadata) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	r := f.Interface.Resource(gvr)
	if gvr == f.gvr {
		return failingMetaList{Getter: r, err: f.err}
	}
	return r
}

type failingMetaList struct {
	metadata.Getter
	err error
}

func (f failingMetaList) List(context.Context, metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	return nil, f.err
}

// A wave that is not ready when its wait runs out ends with what was not
// ready and why, not with a bare timeout; the apply already reports each
// resource's health, and a wait for hooks only does not wait for them.
func TestWaitWaveTimeoutNamesWhatIsNotReady(t *testing.T) {
	h := newHarness(t, WithSettleWait(0))
	objs := h.fixture("guestbook.yaml")
	stuck(t, objs)
	in := WaveInput{Target: h.target("stuck"), Manifests: h.put(objs...), Operation: SyncOperation{SyncID: "s1"}, Step: Step{Phase: PhaseSync}}
	applied := must[WaveOutput](h, ApplyWaveName, in)
	health := map[string]appspec.HealthStatus{}
	for _, r := range applied.Resources {
		health[r.Kind] = r.Health
	}
	if health["Deployment"] != appspec.HealthProgressing || health["ConfigMap"] != appspec.HealthHealthy || applied.Health != appspec.HealthProgressing {
		t.Fatalf("applied health %v, wave %q; want the Deployment Progressing", health, applied.Health)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	out, err := h.a.WaitWave(ctx, in)
	if err != nil {
		t.Fatalf("a wait that ran out: %v; want its output", err)
	}
	if out.Failed == nil || out.Failed.Kind != "Deployment" || !strings.HasPrefix(out.Message, "timed out waiting for Deployment "+h.ns+"/guestbook-ui: ") {
		t.Fatalf("failed %v, message %q; want the Deployment named with its health message", out.Failed, out.Message)
	}

	hooks := in
	hooks.HooksOnly = true
	if out := must[WaveOutput](h, WaitWaveName, hooks); out.Health != appspec.HealthHealthy || len(out.Resources) != 0 {
		t.Fatalf("a wait for hooks only, without hooks = %+v; want done at once", out)
	}
}

// Retrack moves the tracking of the app's objects to another project and
// changes nothing else: same objects, same spec; the app in the new
// project finds them Synced, and a second run has nothing left to move.
func TestRetrack(t *testing.T) {
	h := newHarness(t)
	tg, ref := h.synced("moving", "guestbook.yaml", "m1")
	before := h.get(gvrDeployments, "guestbook-ui")
	out := must[RetrackOutput](h, RetrackName, RetrackInput{Target: tg, Project: "elsewhere", Manifests: &ref})
	if out.Retracked != 3 {
		t.Fatalf("retracked %d objects, want 3", out.Retracked)
	}
	after := h.get(gvrDeployments, "guestbook-ui")
	// The API server bumps a Deployment's generation when its annotations
	// change, so the spec is compared instead: an unchanged template
	// starts no rollout.
	if after.GetUID() != before.GetUID() || !reflect.DeepEqual(after.Object["spec"], before.Object["spec"]) {
		t.Fatalf("deployment replaced or changed: uid %s→%s, spec %v→%v", before.GetUID(), after.GetUID(), before.Object["spec"], after.Object["spec"])
	}
	moved := tg
	moved.Project = "elsewhere"
	if !manifest.OwnedBy(moved.Project, moved.App, after) || after.GetLabels()[manifest.AppLabel] != manifest.AppLabelValue(moved.Project, moved.App) {
		t.Fatalf("deployment tracking = %v, labels %v", after.GetAnnotations()[manifest.TrackingAnnotation], after.GetLabels())
	}
	if c := h.compare(moved, ref, false); c.Sync != appspec.SyncSynced {
		t.Fatalf("the app in its new project compares %s: %+v", c.Sync, c.Resources)
	}
	if again := must[RetrackOutput](h, RetrackName, RetrackInput{Target: tg, Project: "elsewhere", Manifests: &ref}); again.Retracked != 0 {
		t.Fatalf("a second retrack moved %d objects", again.Retracked)
	}
}
