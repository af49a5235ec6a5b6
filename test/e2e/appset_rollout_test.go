package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/workflows"
)

// rollingDirSet is a git-directories set whose apps <prefix>-<dir> carry
// the label env=<dir> and roll out dev, then prod; its template asks for
// automated sync, which the strategy turns off.
func rollingDirSet(name, repoURL, prefix, ns string) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: %s}
spec:
  generators:
  - git: {repoURL: %s, revision: HEAD, directories: [{path: '*'}], requeueAfterSeconds: 5}
  strategy:
    type: RollingSync
    deletionOrder: Reverse
    rollingSync:
      steps:
      - matchExpressions: [{key: env, operator: In, values: [dev]}]
      - matchExpressions: [{key: env, operator: In, values: [prod]}]
  template:
    metadata: {name: '%s-{{path.basename}}', labels: {env: '{{path.basename}}'}}
    spec:
      project: default
      source: {repoURL: %s, targetRevision: HEAD, path: '{{path}}'}
      destination: {server: 'https://kubernetes.default.svc', namespace: '%s-{{path.basename}}'}
      syncPolicy: {automated: {prune: true}, syncOptions: [CreateNamespace=true]}
`, name, repoURL, prefix, repoURL, ns)
}

// Issue 29's set-driven RollingSync: the set's apps are created without
// automated sync and its rollout syncs dev, then prod; a commit that
// breaks the dev app halts the next rollout before prod, and the set's
// API and CLI name the app; deleting the set removes prod's app before
// dev's.
func TestAppSetRollingSync(t *testing.T) {
	set, prefix, ns := uniq("rs"), uniq("rs"), uniq("rs")
	dev, prod := prefix+"-dev", prefix+"-prod"
	repoURL, work := newRepo(t, set)
	push(t, work, dirFiles("dev", "prod"))
	var d api.AppSetDetail
	if code := call(t, http.MethodPost, "/api/v1/applicationsets", rollingDirSet(set, repoURL, prefix, ns), &d); code != http.StatusCreated {
		t.Fatalf("create set: status %d %+v", code, d)
	}
	rollout := func(what string, done func(*workflows.RolloutStatus) bool) api.AppSetDetail {
		t.Helper()
		eventually(t, 4*time.Minute, what, func() (bool, string) {
			d, _ = setApps(t, set)
			if d.Rollout == nil {
				return false, fmt.Sprintf("no rollout; status %+v", d.Status.Rollout)
			}
			return done(d.Rollout), rolloutState(*d.Rollout, http.StatusOK)
		})
		return d
	}
	d = rollout("the first rollout to complete", func(st *workflows.RolloutStatus) bool { return st.Phase == workflows.RolloutCompleted })
	first := d.Rollout.Target
	for _, name := range []string{dev, prod} {
		if v := appView(t, name); v.Spec.IsAutomated() || v.Spec.Labels["env"] == "" {
			t.Fatalf("%s: automated %t, labels %v; want no automated sync and its env label", name, v.Spec.IsAutomated(), v.Spec.Labels)
		}
		if got := syncRecords(t, name); len(got) != 1 {
			t.Fatalf("%s has %d syncs after the first rollout, want 1", name, len(got))
		}
	}
	devSync, prodSync := appView(t, dev).History[0], appView(t, prod).History[0]
	if !prodSync.StartedAt.After(devSync.FinishedAt) {
		t.Fatalf("prod's sync started at %s, before dev's ended at %s", prodSync.StartedAt, devSync.FinishedAt)
	}
	t.Logf("first rollout %s: prod started %s after dev ended", first, prodSync.StartedAt.Sub(devSync.FinishedAt).Round(time.Millisecond))

	// A commit breaks dev (a Deployment no pod can start) and changes
	// prod; the webhook and the set's requeue bring the next rollout.
	files := map[string]string{"dev/deploy.yaml": fmt.Sprintf(quotaDeploymentYAML, 0, 1), "prod/cm.yaml": fmt.Sprintf(appSetConfigMap, "cm-prod", "prod-v2")}
	sha := push(t, work, files)
	if code := sendGitHubPush(t, repoURL, sha, bed.hookSecret); code != http.StatusOK {
		t.Fatalf("webhook: status %d", code)
	}
	d = rollout("the second rollout to halt", func(st *workflows.RolloutStatus) bool {
		if st.Target != first && st.Phase == workflows.RolloutCompleted {
			t.Fatalf("the second rollout completed without halting: %+v", st)
		}
		return st.Target != first && st.Phase == workflows.RolloutHalted
	})
	if d.Rollout.HaltedBy != "default/"+dev || d.Rollout.Step != 0 || !strings.Contains(d.Rollout.Message, "halted at step 1: default/"+dev) {
		t.Fatalf("halted by %q at step %d: %s; want %s at step 1", d.Rollout.HaltedBy, d.Rollout.Step+1, d.Rollout.Message, dev)
	}
	// Two at least: an app that compares the commit after the other
	// moves the target once more.
	if d.Status.Rollout == nil || d.Status.Rollout.Started < 2 {
		t.Fatalf("the set's rollout status %+v, want 2 or more started", d.Status.Rollout)
	}
	if got := syncRecords(t, prod); len(got) != 1 {
		t.Fatalf("prod has %d syncs while step 1 is halted, want 1", len(got))
	}
	if v := appView(t, prod); v.Status.Sync != "OutOfSync" {
		t.Errorf("prod is %s while held back, want OutOfSync", v.Status.Sync)
	}
	cli := windlassCLI(t)
	cliLogin(t, cli)
	out, stderr, code := cli("", "appset", "get", set)
	if code != 0 || !strings.Contains(out, "Phase:    Halted") || !strings.Contains(out, "halted at step 1: default/"+dev) {
		t.Fatalf("appset get: exit %d: %s%s", code, out, stderr)
	}
	t.Logf("halted: %s", d.Rollout.Message)

	// Reverse deletion: prod's app goes first; dev's goes once prod's
	// has gone (its workflow closed).
	var res struct{ Deleted []string }
	if code := call(t, http.MethodDelete, "/api/v1/applicationsets/"+set, nil, &res); code != http.StatusOK {
		t.Fatalf("delete set: status %d", code)
	}
	if want := []string{"default/" + prod, "default/" + dev}; !slices.Equal(res.Deleted, want) {
		t.Fatalf("deleted %v, want %v", res.Deleted, want)
	}
	closed := map[string]time.Time{}
	for _, name := range []string{dev, prod} {
		desc, err := bed.temporal.DescribeWorkflowExecution(t.Context(), workflows.AppWorkflowID("default", name), "")
		if err != nil {
			t.Fatal(err)
		}
		info := desc.GetWorkflowExecutionInfo()
		if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			t.Fatalf("%s still runs after the set's deletion", name)
		}
		closed[name] = info.GetCloseTime().AsTime()
	}
	asked := deleteAccepted(t, dev)
	if !closed[prod].Before(asked) {
		t.Fatalf("dev's deletion was accepted at %s, before prod's app closed at %s", asked, closed[prod])
	}
	t.Logf("dev's deletion was accepted %s after prod's app closed", asked.Sub(closed[prod]).Round(time.Millisecond))
}

// deleteAccepted is when the app's workflow accepted its delete update,
// read from its history.
func deleteAccepted(t *testing.T, name string) time.Time {
	t.Helper()
	it := bed.temporal.GetWorkflowHistory(t.Context(), workflows.AppWorkflowID("default", name), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetWorkflowExecutionUpdateAcceptedEventAttributes(); a != nil && a.GetAcceptedRequest().GetInput().GetName() == workflows.UpdateDelete {
			return ev.GetEventTime().AsTime()
		}
	}
	t.Fatalf("%s's history has no accepted delete update", name)
	return time.Time{}
}
