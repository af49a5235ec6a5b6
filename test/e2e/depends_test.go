package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/api/frontdoor"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/workflows"
)

// slowDeploymentYAML is a Deployment that becomes available only
// minReadySeconds after its pod is ready: on kwok, a dependency that takes
// a moment to become Healthy.
const slowDeploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: guestbook-ui
spec:
  replicas: 1
  minReadySeconds: 8
  selector:
    matchLabels: {app: guestbook-ui}
  template:
    metadata:
      labels: {app: guestbook-ui}
    spec:
      containers:
      - name: guestbook-ui
        image: gcr.io/heptio-images/ks-guestbook-demo:0.1
`

// syncRecords lists an app's syncs from the full sync history.
func syncRecords(t *testing.T, name string) []api.SyncRecord {
	t.Helper()
	var list api.SyncList
	if code := call(t, http.MethodGet, "/api/v1/applications/"+name+"/syncs", nil, &list); code != http.StatusOK {
		t.Fatalf("syncs of %s: status %d", name, code)
	}
	return list.Items
}

// Issue 29's proof for dependsOn: B depends on A; B's sync, asked for
// first, waits and says so, and starts only after A is Healthy, read from
// the two syncs' start and end times. A cycle is refused when saved.
func TestDependsOnOrdersSyncs(t *testing.T) {
	nsA, nsB := uniq("dep-a"), uniq("dep-b")
	a, b := uniq("dep-db"), uniq("dep-web")
	repoA, workA := newRepo(t, a)
	push(t, workA, map[string]string{"guestbook/guestbook-ui-deployment.yaml": slowDeploymentYAML})
	repoB, workB := newRepo(t, b)
	push(t, workB, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1"))
	if code := call(t, http.MethodPost, "/api/v1/applications", appBody(a, repoA, "guestbook", nsA), nil); code != http.StatusCreated {
		t.Fatalf("create %s: status %d", a, code)
	}
	bodyB := appBody(b, repoB, "guestbook", nsB)
	bodyB["dependsOn"] = []string{a}
	if code := call(t, http.MethodPost, "/api/v1/applications", bodyB, nil); code != http.StatusCreated {
		t.Fatalf("create %s: status %d", b, code)
	}

	// A's answer names B, which depends on it (the reverse lookup).
	eventually(t, time.Minute, a+" to list "+b+" as its dependent", func() (bool, string) {
		var d api.AppDetail
		call(t, http.MethodGet, "/api/v1/applications/"+a, nil, &d)
		return slices.Equal(d.Dependents, []string{"default/" + b}), fmt.Sprintf("dependents %v", d.Dependents)
	})

	// A cycle is refused, named, and nothing is saved.
	bodyA := appBody(a, repoA, "guestbook", nsA)
	bodyA["dependsOn"] = []string{b}
	var prob api.Problem
	if code := call(t, http.MethodPut, "/api/v1/applications/"+a, bodyA, &prob); code != http.StatusBadRequest ||
		prob.Detail != fmt.Sprintf("dependsOn: cycle: %s -> %s -> %s", a, b, a) || prob.Field != "dependsOn" {
		t.Fatalf("update closing a cycle: status %d, %+v", code, prob)
	}
	if v := appView(t, a); len(v.Spec.DependsOn) != 0 {
		t.Fatalf("the refused update was saved: dependsOn %v", v.Spec.DependsOn)
	}

	// B's sync is accepted, and waits for A, which is OutOfSync.
	var acc workflows.SyncAccepted
	if code := call(t, http.MethodPost, "/api/v1/applications/"+b+"/sync?wait=false", nil, &acc); code != http.StatusAccepted ||
		len(acc.WaitingFor) != 1 || acc.WaitingFor[0].App.Name != a {
		t.Fatalf("sync of %s: status %d, %+v", b, code, acc)
	}
	t.Logf("sync of %s accepted: %s waits for %s: %s", b, acc.ID, acc.WaitingFor[0].App, acc.WaitingFor[0].Reason)
	if op := appView(t, b).Status.Operation; op == nil || op.Phase != workflows.PhasePending || len(op.WaitingFor) != 1 {
		t.Fatalf("operation of %s: %+v, want Pending and waiting for %s", b, op, a)
	}
	if len(syncRecords(t, b)) != 0 {
		t.Fatalf("a sync of %s started while %s is OutOfSync", b, a)
	}

	// A syncs; B goes on waiting until A is Healthy.
	resA := syncApp(t, a)
	reasons := map[string]bool{}
	eventually(t, 2*time.Minute, b+"'s sync to succeed", func() (bool, string) {
		v := appView(t, b)
		if op := v.Status.Operation; op != nil {
			for _, w := range op.WaitingFor {
				reasons[w.Reason] = true
			}
		}
		return len(v.History) == 1 && v.History[0].Phase == workflows.PhaseSucceeded, fmt.Sprintf("operation %+v, %d syncs", v.Status.Operation, len(v.History))
	})
	t.Logf("%s waited because %s: %v", b, a, keys(reasons))

	// Read from the sync history: B started after A's sync ended, and after
	// A's Deployment became available.
	recA, recB := syncRecords(t, a), syncRecords(t, b)
	if len(recA) != 1 || len(recB) != 1 {
		t.Fatalf("syncs: %d of %s, %d of %s; want one each", len(recA), a, len(recB), b)
	}
	if recA[0].ID != resA.ID || recB[0].ID != acc.ID {
		t.Fatalf("sync IDs %s and %s, want %s and %s", recA[0].ID, recB[0].ID, resA.ID, acc.ID)
	}
	if !recB[0].Started.After(recA[0].Finished) {
		t.Fatalf("%s started at %s, before %s's sync ended at %s", b, recB[0].Started, a, recA[0].Finished)
	}
	d, err := bed.kube.AppsV1().Deployments(nsA).Get(t.Context(), "guestbook-ui", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var available time.Time
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			available = c.LastTransitionTime.Time
		}
	}
	if available.IsZero() || recB[0].Started.Before(available) {
		t.Fatalf("%s started at %s; %s's Deployment available since %v", b, recB[0].Started, a, available)
	}
	t.Logf("%s: sync %s to %s; available at %s; %s: sync started %s after %s's sync ended",
		a, recA[0].Started.Format(time.RFC3339Nano), recA[0].Finished.Format(time.RFC3339Nano), available.Format(time.RFC3339),
		b, recB[0].Started.Sub(recA[0].Finished).Round(time.Millisecond), a)
	if v := appView(t, a); v.Status.Health != appspec.HealthHealthy {
		t.Fatalf("%s is %s after %s synced", a, v.Status.Health, b)
	}
	if _, ok := deploymentAvailable(t, nsB); !ok {
		t.Fatalf("%s's deployment is not available", b)
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A cycle is refused from the CLI (an Argo CD Application's depends-on
// annotation, and a patch), with the cycle named; nothing is saved.
func TestDependsOnCycleFromCLI(t *testing.T) {
	cli := windlassCLI(t)
	cliLogin(t, cli)
	a, b := uniq("depcli-a"), uniq("depcli-b")
	manifest := func(name, deps string) string {
		p := filepath.Join(t.TempDir(), name+".yaml")
		doc := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  namespace: argocd
  annotations:
    windlass.dev/depends-on: %q
spec:
  project: default
  source: {repoURL: https://git.example.com/deps.git, targetRevision: main, path: %s}
  destination: {server: https://kubernetes.default.svc, namespace: %s}
`, name, deps, name, name)
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	runCLISteps(t, cli, []cliStep{
		{[]string{"app", "create", "-f", manifest(a, b)}, 0, a},
		{[]string{"app", "create", "-f", manifest(b, "")}, 0, b},
		{[]string{"app", "get", a}, 0, "Depends On:     " + b},
	})
	_, stderr, code := cli("", "app", "create", "--upsert", "-f", manifest(b, a))
	if want := fmt.Sprintf("cycle: %s -> %s -> %s", b, a, b); code == 0 || !strings.Contains(stderr, want) {
		t.Fatalf("create closing a cycle: exit %d, stderr %q; want %q", code, stderr, want)
	}
	_, stderr, code = cli("", "app", "patch", b, "--patch", fmt.Sprintf(`{"dependsOn": [%q]}`, a))
	if want := fmt.Sprintf("cycle: %s -> %s -> %s", b, a, b); code == 0 || !strings.Contains(stderr, want) {
		t.Fatalf("patch closing a cycle: exit %d, stderr %q; want %q", code, stderr, want)
	}
	if out, _, _ := cli("", "app", "get", b, "-o", "json"); strings.Contains(out, `"dependsOn"`) {
		t.Fatalf("the refused change was saved: %s", out)
	}
}

// kill stops dev at once (SIGKILL: its worker dies in whatever it is
// doing) and starts it again on the same data directory and ports.
func (d *devProcess) kill(t *testing.T) {
	t.Helper()
	if err := d.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = d.cmd.Wait()
	cmd := exec.Command(d.bin, "dev")
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = d.dir, d.cmd.Env, d.logs, d.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.cmd = cmd
	eventually(t, 3*time.Minute, "windlass dev is ready again", func() (bool, string) {
		code, err := d.ready()
		return code == http.StatusOK, fmt.Sprint(code, err)
	})
	// A new dev does not know the old sessions: log in again.
	d.login(t)
}

// A sync that waits for a dependency survives the death of its worker:
// after dev is killed and started again, it still waits, and starts once
// the dependency is Healthy.
func TestDependsOnWaitSurvivesRestart(t *testing.T) {
	d := startDev(t)
	nsA, nsB := uniq("depk-a"), uniq("depk-b")
	a, b := uniq("depk-db"), uniq("depk-web")
	repoA, workA := newRepo(t, a)
	push(t, workA, map[string]string{"guestbook/guestbook-ui-deployment.yaml": slowDeploymentYAML})
	repoB, workB := newRepo(t, b)
	push(t, workB, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1"))
	d.createApp(t, a, repoA, "path: guestbook", nsA)
	manifest := filepath.Join(t.TempDir(), "b.yaml")
	doc := strings.Replace(argoApp(b, repoB, "path: guestbook", nsB), "metadata: {name: "+b+"}",
		"metadata: {name: "+b+", annotations: {windlass.dev/depends-on: "+a+"}}", 1)
	if err := os.WriteFile(manifest, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, stderr, code := d.cli("", "app", "create", "-f", manifest); code != 0 {
		t.Fatalf("create %s: exit %d: %s%s", b, code, out, stderr)
	}
	out, stderr, code := d.cli("", "app", "sync", b, "--async")
	if code != 0 || !strings.Contains(out, "waiting for default/"+a) {
		t.Fatalf("sync %s: exit %d: %s%s", b, code, out, stderr)
	}
	waiting := func(name string, v workflows.AppView) (bool, string) {
		op := v.Status.Operation
		return op != nil && op.Phase == workflows.PhasePending && len(op.WaitingFor) == 1 && op.WaitingFor[0].App.Name == a,
			"a Pending sync waiting for " + a
	}
	d.waitApps(t, time.Minute, b+" waiting", []string{b}, waiting)
	before, _, _ := d.app(b)

	d.kill(t)
	d.waitApps(t, time.Minute, b+" still waiting after the restart", []string{b}, waiting)
	after, _, _ := d.app(b)
	if after.Status.Operation.SyncID != before.Status.Operation.SyncID || len(after.History) != 0 {
		t.Fatalf("after the restart: operation %s, %d syncs; before: %s", after.Status.Operation.SyncID, len(after.History), before.Status.Operation.SyncID)
	}

	if out, stderr, code := d.cli("", "app", "sync", a); code != 0 {
		t.Fatalf("sync %s: exit %d: %s%s", a, code, out, stderr)
	}
	d.waitApps(t, 2*time.Minute, b+" synced", []string{b}, func(_ string, v workflows.AppView) (bool, string) {
		return len(v.History) == 1 && v.History[0].Phase == workflows.PhaseSucceeded, "one sync, Succeeded"
	})
	va, _, _ := d.app(a)
	vb, _, _ := d.app(b)
	if vb.History[0].ID != before.Status.Operation.SyncID || !vb.History[0].StartedAt.After(va.History[0].FinishedAt) {
		t.Fatalf("%s's sync %s started at %s; %s's sync ended at %s", b, vb.History[0].ID, vb.History[0].StartedAt, a, va.History[0].FinishedAt)
	}
	t.Logf("%s waited across a restart; its sync started %s after %s's ended", b, vb.History[0].StartedAt.Sub(va.History[0].FinishedAt).Round(time.Millisecond), a)
}

// A cycle is refused from an Application resource too (the front door):
// the resource's status names it, and the app keeps its spec.
func TestDependsOnCycleFromFrontDoor(t *testing.T) {
	if err := testbed.InstallCRDs(t.Context(), bed.env.Cluster.Config, "deploy/crds/applications.yaml", "deploy/crds/appprojects.yaml"); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(bed.env.Cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	crNS, dest := uniq("fdd-apps"), uniq("fdd-dest")
	if _, err := bed.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: crNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a, b, project := uniq("fdd-a"), uniq("fdd-b"), uniq("fdd-team")
	repoURL, work := newRepo(t, a)
	push(t, work, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1"))
	dev := startDev(t, "WINDLASS_WATCH_APPLICATIONS="+crNS)
	apps := dyn.Resource(frontdoor.Applications).Namespace(crNS)
	if _, err := dyn.Resource(frontdoor.AppProjects).Namespace(crNS).Create(t.Context(), frontDoorProject(crNS, project, repoURL, dest), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	manual := func(name, dependsOn string) *unstructured.Unstructured {
		u := frontDoorApp(crNS, name, project, repoURL, dest)
		unstructured.RemoveNestedField(u.Object, "spec", "syncPolicy", "automated")
		if dependsOn != "" {
			u.SetAnnotations(map[string]string{appspec.AnnotationDependsOn: dependsOn})
		}
		return u
	}
	for _, u := range []*unstructured.Unstructured{manual(a, b), manual(b, "")} {
		if _, err := apps.Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Only the spec is read: a 404's problem has a numeric status.
	type specOnly struct {
		Spec appspec.Application `json:"spec"`
	}
	eventually(t, time.Minute, "both apps made, "+a+" depending on "+b, func() (bool, string) {
		var va, vb specOnly
		ca := dev.call(t, http.MethodGet, "/api/v1/applications/"+a+"?project="+project, nil, &va)
		cb := dev.call(t, http.MethodGet, "/api/v1/applications/"+b+"?project="+project, nil, &vb)
		return ca == http.StatusOK && cb == http.StatusOK && len(va.Spec.DependsOn) == 1, fmt.Sprintf("%d %d %v", ca, cb, va.Spec.DependsOn)
	})
	cur, err := apps.Get(t.Context(), b, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.SetAnnotations(map[string]string{appspec.AnnotationDependsOn: a})
	if _, err := apps.Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("cycle: %s -> %s -> %s", b, a, b)
	eventually(t, time.Minute, "a condition naming the cycle", func() (bool, string) {
		u, err := apps.Get(t.Context(), b, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if msg, _ := m["message"].(string); strings.Contains(msg, want) {
				return true, ""
			}
		}
		return false, fmt.Sprint(conds)
	})
	var vb specOnly
	if code := dev.call(t, http.MethodGet, "/api/v1/applications/"+b+"?project="+project, nil, &vb); code != http.StatusOK || len(vb.Spec.DependsOn) != 0 {
		t.Fatalf("%s after the refused change: status %d, dependsOn %v", b, code, vb.Spec.DependsOn)
	}
}
