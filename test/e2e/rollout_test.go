package e2e

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/windlass-cd/windlass/activities/rollout"
	"github.com/windlass-cd/windlass/internal/labelmatch"
	"github.com/windlass-cd/windlass/internal/temporalx"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/workflows"
)

// quotaDeploymentYAML is a quota on the namespace's pods (applied
// first) and a Deployment. With a quota of 0 no pod is ever made, the
// Deployment exceeds its short progress deadline and turns Degraded; a
// higher quota and a new release of the template let it become
// available.
const quotaDeploymentYAML = `apiVersion: v1
kind: ResourceQuota
metadata:
  name: pods
  annotations: {argocd.argoproj.io/sync-wave: "-1"}
spec:
  hard: {pods: "%d"}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: guestbook-ui
spec:
  replicas: 1
  progressDeadlineSeconds: 10
  selector:
    matchLabels: {app: guestbook-ui}
  template:
    metadata:
      labels: {app: guestbook-ui}
      annotations: {windlass.dev/test-release: "%d"}
    spec:
      containers:
      - name: guestbook-ui
        image: gcr.io/heptio-images/ks-guestbook-demo:0.1
`

// envSteps is a RollingSync of dev, then staging, then prod.
func envSteps() []workflows.RolloutStep {
	step := func(env string) workflows.RolloutStep {
		return workflows.RolloutStep{MatchExpressions: []labelmatch.Expression{{Key: "env", Operator: labelmatch.OpIn, Values: []string{env}}}}
	}
	return []workflows.RolloutStep{step("dev"), step("staging"), step("prod")}
}

// startRollout starts a rollout over a list of apps, as the set's
// workflow does for its apps.
func startRollout(t *testing.T, c client.Client, in workflows.RolloutInput) {
	t.Helper()
	_, err := c.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{ID: workflows.RolloutWorkflowID(in.Set), TaskQueue: workflows.TaskQueue},
		workflows.RollingSyncWorkflowName, in)
	if err != nil {
		t.Fatalf("start rollout %s: %v", in.Set, err)
	}
}

// rolloutOf reads a set's rollout through the API at base.
func rolloutOf(t *testing.T, base, token, set string) (workflows.RolloutStatus, int) {
	t.Helper()
	var st workflows.RolloutStatus
	code := callBase(t, base, token, http.MethodGet, "/api/v1/applicationsets/"+set+"/rollout", nil, &st)
	return st, code
}

func rolloutState(st workflows.RolloutStatus, code int) string {
	return fmt.Sprintf("%d: %s at step %d: %s", code, st.Phase, st.Step+1, st.Message)
}

// Issue 29's proof for RollingSync: three steps, of which the second
// holds an app that becomes Degraded. Steps 1 and 2 sync, step 3 never
// does (read from the apps' sync history), and the set's rollout names
// the app; resume after a fix syncs it again and completes the rollout.
func TestRollingSyncHaltsOnDegradedAndResumes(t *testing.T) {
	set := uniq("ro-set")
	names := map[string]string{"dev": uniq("ro-dev"), "bad": uniq("ro-stg-bad"), "ok": uniq("ro-stg-ok"), "prod": uniq("ro-prod")}
	var badWork *testbed.WorkRepo
	var apps []workflows.RolloutApp
	for _, k := range []string{"dev", "bad", "ok", "prod"} {
		name := names[k]
		repo, work := newRepo(t, name)
		files := guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1")
		if k == "bad" {
			files = map[string]string{"guestbook/guestbook-ui-deployment.yaml": fmt.Sprintf(quotaDeploymentYAML, 0, 1)}
		}
		push(t, work, files)
		if code := call(t, http.MethodPost, "/api/v1/applications", appBody(name, repo, "guestbook", uniq("ro-ns")), nil); code != http.StatusCreated {
			t.Fatalf("create %s: status %d", name, code)
		}
		env := map[string]string{"dev": "dev", "bad": "staging", "ok": "staging", "prod": "prod"}[k]
		apps = append(apps, workflows.RolloutApp{Project: "default", Name: name, Labels: map[string]string{"env": env}})
		if k == "bad" {
			badWork = work
		}
	}
	startRollout(t, bed.temporal, workflows.RolloutInput{Set: set, Project: "default", Target: "v2", Steps: envSteps(), Apps: apps, PollSeconds: 2})

	var st workflows.RolloutStatus
	eventually(t, 4*time.Minute, "the rollout to halt", func() (bool, string) {
		var code int
		st, code = rolloutOf(t, bed.api.URL, bed.token, set)
		if st.Phase == workflows.RolloutCompleted {
			t.Fatalf("the rollout completed without halting: %+v", st)
		}
		return code == http.StatusOK && st.Phase == workflows.RolloutHalted, rolloutState(st, code)
	})
	bad := "default/" + names["bad"]
	if st.HaltedBy != bad || st.Step != 1 || !strings.Contains(st.Message, "halted at step 2: "+bad) {
		t.Fatalf("halted: by %q at step %d: %s; want %s at step 2", st.HaltedBy, st.Step+1, st.Message, bad)
	}
	t.Logf("halted: %s", st.Message)
	// Steps 1 and 2 synced, step 3 did not: read from the sync history.
	for k, want := range map[string]int{"dev": 1, "bad": 1, "ok": 1, "prod": 0} {
		if got := syncRecords(t, names[k]); len(got) != want {
			t.Fatalf("%s has %d syncs while halted, want %d", names[k], len(got), want)
		}
	}

	// The CLI shows the halt and cannot pause it; the fix is committed and
	// resume syncs the app again.
	cli := windlassCLI(t)
	cliLogin(t, cli)
	out, stderr, code := cli("", "appset", "rollout", "status", set)
	if code != 0 || !strings.Contains(out, "Phase:    Halted") || !strings.Contains(out, bad) {
		t.Fatalf("rollout status: exit %d: %s%s", code, out, stderr)
	}
	if _, stderr, code := cli("", "appset", "rollout", "pause", set); code == 0 || !strings.Contains(stderr, "cannot pause a rollout that is Halted") {
		t.Fatalf("pause of a halted rollout: exit %d: %s", code, stderr)
	}
	push(t, badWork, map[string]string{"guestbook/guestbook-ui-deployment.yaml": fmt.Sprintf(quotaDeploymentYAML, 10, 2)})
	if out, stderr, code := cli("", "appset", "rollout", "resume", set, "--reason", "fixed"); code != 0 || !strings.Contains(out, "resumed by admin: fixed") {
		t.Fatalf("rollout resume: exit %d: %s%s", code, out, stderr)
	}
	eventually(t, 4*time.Minute, "the rollout to complete", func() (bool, string) {
		var code int
		st, code = rolloutOf(t, bed.api.URL, bed.token, set)
		return code == http.StatusOK && st.Phase == workflows.RolloutCompleted, rolloutState(st, code)
	})

	// Counted from the full sync history; read from the apps' recent
	// syncs (newest first).
	recs := map[string][]workflows.SyncSummary{}
	for k, want := range map[string]int{"dev": 1, "bad": 2, "ok": 1, "prod": 1} {
		if got := syncRecords(t, names[k]); len(got) != want {
			t.Fatalf("%s has %d syncs, want %d", names[k], len(got), want)
		}
		recs[k] = appView(t, names[k]).History
	}
	fixed, prod := recs["bad"][0], recs["prod"][0]
	if !prod.StartedAt.After(fixed.FinishedAt) || !prod.StartedAt.After(recs["ok"][0].FinishedAt) {
		t.Fatalf("prod started at %s; staging's syncs ended at %s and %s", prod.StartedAt, fixed.FinishedAt, recs["ok"][0].FinishedAt)
	}
	if !strings.HasSuffix(fixed.Initiator, " try 2") || fixed.Phase != workflows.PhaseSucceeded {
		t.Fatalf("the bad app's last sync: %+v; want the rollout's second try, Succeeded", fixed)
	}
	t.Logf("the bad app's first sync: %s: %s", recs["bad"][1].Phase, recs["bad"][1].Message)
	t.Logf("prod started %s after the fixed staging sync ended", prod.StartedAt.Sub(fixed.FinishedAt).Round(time.Millisecond))

	// Each step is in the rollout's history: a memo upsert as it starts,
	// and an activity per sync named by its step.
	steps, syncs := rolloutHistory(t, bed.temporal, set)
	if want := []string{"step 1: sync default/" + names["dev"], "step 2: sync default/" + names["bad"], "step 2: sync default/" + names["ok"],
		"step 2: sync default/" + names["bad"], "step 3: sync default/" + names["prod"]}; steps != 3 || !slices.Equal(syncs, want) {
		t.Fatalf("history: %d step starts, syncs %q; want 3 and %q", steps, syncs, want)
	}
}

// rolloutHistory counts a rollout's step starts (memo upserts) and lists
// its sync activities' summaries.
func rolloutHistory(t *testing.T, c client.Client, set string) (int, []string) {
	t.Helper()
	it := c.GetWorkflowHistory(t.Context(), workflows.RolloutWorkflowID(set), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	steps := 0
	var syncs []string
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
			steps++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			if a := ev.GetActivityTaskScheduledEventAttributes(); a.GetActivityType().GetName() == rollout.SyncName {
				var summary string
				if p := ev.GetUserMetadata().GetSummary(); p != nil {
					summary = strings.Trim(string(p.GetData()), `"`)
				}
				syncs = append(syncs, summary)
			}
		}
	}
	return steps, syncs
}

// Kill the worker in the middle of a rollout: once it runs again, the
// rollout goes on at the same step, and no app is synced twice.
func TestRollingSyncSurvivesWorkerKill(t *testing.T) {
	d := startDev(t)
	set := uniq("rok-set")
	names := []string{uniq("rok-dev"), uniq("rok-stg"), uniq("rok-prod")}
	envs := []string{"dev", "staging", "prod"}
	var apps []workflows.RolloutApp
	for i, name := range names {
		repo, work := newRepo(t, name)
		// The slow Deployment keeps each sync running for a while.
		push(t, work, map[string]string{"guestbook/guestbook-ui-deployment.yaml": slowDeploymentYAML})
		d.createApp(t, name, repo, "path: guestbook", uniq("rok-ns"))
		apps = append(apps, workflows.RolloutApp{Project: "default", Name: name, Labels: map[string]string{"env": envs[i]}})
	}
	c, err := temporalx.Dial(t.Context(), temporalx.ClientConfig{HostPort: d.temporal, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	startRollout(t, c, workflows.RolloutInput{Set: set, Project: "default", Target: "v2", Steps: envSteps(), Apps: apps, PollSeconds: 2})

	var before workflows.RolloutStatus
	eventually(t, 3*time.Minute, "step 2's app syncing", func() (bool, string) {
		st, code := d.rollout(set)
		before = st
		return code == http.StatusOK && st.Step == 1 && st.Steps[1].Apps[0].Phase == workflows.RolloutAppSyncing, rolloutState(st, code)
	})
	syncID := before.Steps[1].Apps[0].SyncID
	t.Logf("killing dev while %s syncs (%s)", names[1], syncID)
	d.kill(t)

	var after workflows.RolloutStatus
	first := true
	eventually(t, 4*time.Minute, "the rollout to complete after the restart", func() (bool, string) {
		st, code := d.rollout(set)
		if code == http.StatusOK && first {
			first = false
			if st.Step < 1 {
				t.Errorf("after the restart the rollout is back at step %d", st.Step+1)
			}
		}
		after = st
		return code == http.StatusOK && st.Phase == workflows.RolloutCompleted, rolloutState(st, code)
	})
	if got := after.Steps[1].Apps[0]; got.SyncID != syncID || got.Attempt != 1 {
		t.Fatalf("step 2's app after the restart: sync %s, attempt %d; want %s, 1", got.SyncID, got.Attempt, syncID)
	}
	for _, name := range names {
		v, state, ok := d.app(name)
		if !ok || len(v.History) != 1 || v.History[0].Phase != workflows.PhaseSucceeded {
			t.Fatalf("%s: %s; want one Succeeded sync", name, state)
		}
	}
}

// rollout reads a set's rollout with the CLI (whose login the restart
// renews); code is 200 when the CLI answered.
func (d *devProcess) rollout(set string) (workflows.RolloutStatus, int) {
	var st workflows.RolloutStatus
	out, stderr, code := d.cli("", "appset", "rollout", "status", set, "-o", "json")
	if code != 0 {
		st.Message = stderr
		return st, 0
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		st.Message = err.Error()
		return st, 0
	}
	return st, http.StatusOK
}
