package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/windlass-cd/windlass/api/webhook"
)

// latencies emits p50 and p95 of xs (seconds) under id and records them.
func latencies(res *results, id string, xs []float64) {
	res.addRun(id, map[string]any{"seconds": xs, "loadAverage": loadAverage()})
	res.emit(id+".p50", percentile(xs, 50), "s", len(xs))
	res.emit(id+".p95", percentile(xs, 95), "s", len(xs))
}

// benchPushToLive is B2: one automated app; each iteration pushes a new
// ConfigMap version and sends a signed GitHub push webhook, and is timed
// from the end of the push until the new ConfigMap is live and the app is
// Synced at the pushed SHA. One warm-up iteration is not counted.
func benchPushToLive(ctx context.Context, e *env, res *results, iterations int, histories string) error {
	name := "b2-push"
	repoURL, work, err := e.newRepo(ctx, name)
	if err != nil {
		return err
	}
	if _, err := e.request(ctx, http.MethodPost, "/api/v1/applications", appBody(name, repoURL, false), nil); err != nil {
		return err
	}
	if err := e.waitSynced(ctx, name, "", 3*time.Minute, 250*time.Millisecond); err != nil {
		return err
	}
	var xs []float64
	for i := range iterations + 1 {
		version := strconv.Itoa(i + 1)
		if err := work.WriteFile("app/configmap.yaml", configMapYAML(version)); err != nil {
			return err
		}
		sha, err := work.CommitAndPush(ctx, "version "+version)
		if err != nil {
			return err
		}
		before, err := e.kube.CoreV1().ConfigMaps(name).Get(ctx, "settings", metav1.GetOptions{})
		if err != nil {
			return err
		}
		start := time.Now()
		if err := e.sendGitHubPush(ctx, repoURL, sha); err != nil {
			return err
		}
		w, err := e.kube.CoreV1().ConfigMaps(name).Watch(ctx, watchFrom("settings", before.ResourceVersion))
		if err != nil {
			return err
		}
		_, err = awaitEvent(ctx, w, "ConfigMap version "+version+" live", func(o runtime.Object) (bool, string) {
			cm, ok := o.(*corev1.ConfigMap)
			if !ok {
				return false, ""
			}
			return cm.Data["version"] == version, "version " + cm.Data["version"]
		})
		if err != nil {
			return err
		}
		if err := e.waitSynced(ctx, name, sha, time.Minute, 10*time.Millisecond); err != nil {
			return err
		}
		took := time.Since(start).Seconds()
		if i == 0 {
			slog.Info("B2 warm-up", "seconds", took)
			continue
		}
		xs = append(xs, took)
	}
	latencies(res, "B2", xs)
	if histories != "" {
		return writeSampleHistories(ctx, e, histories, name)
	}
	return nil
}

// sendGitHubPush posts a GitHub push event for repoURL's main branch,
// signed with the server's secret.
func (e *env) sendGitHubPush(ctx context.Context, repoURL, sha string) error {
	body, err := json.Marshal(map[string]any{
		"ref": "refs/heads/main", "after": sha,
		"repository": map[string]any{"html_url": repoURL, "clone_url": repoURL + ".git", "default_branch": "main"},
	})
	if err != nil {
		return err
	}
	mac := hmac.New(sha256.New, []byte(e.webhookSecret))
	mac.Write(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.api+webhook.Path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("webhook: status %d", resp.StatusCode)
	}
	return nil
}

// b3RefreshSeconds is B3's app refresh interval.
const b3RefreshSeconds = 3

// benchDriftToHealed is B3: one selfHeal app; each iteration scales its
// Deployment to 3 replicas as `kubectl scale` does and is timed until the
// live object is back at 1 replica. One warm-up iteration is not counted.
// The edits are spaced so that each is healed at once, not after the
// self-heal backoff of repeated drift.
func benchDriftToHealed(ctx context.Context, e *env, res *results, iterations int, histories string) error {
	name := "b3-drift"
	repoURL, _, err := e.newRepo(ctx, name)
	if err != nil {
		return err
	}
	// Self-heal backs off (2 s, 6 s, 18 s ... between heals) until a
	// refresh finds the app Synced: a short refresh interval, and a pause
	// longer than it between edits, make every edit a first heal.
	body := appBody(name, repoURL, true)
	body["refreshSeconds"] = b3RefreshSeconds
	if _, err := e.request(ctx, http.MethodPost, "/api/v1/applications", body, nil); err != nil {
		return err
	}
	if err := e.waitSynced(ctx, name, "", 3*time.Minute, 250*time.Millisecond); err != nil {
		return err
	}
	deployments := e.kube.AppsV1().Deployments(name)
	var xs []float64
	for i := range iterations + 1 {
		start := time.Now()
		scaled, err := deployments.UpdateScale(ctx, "web",
			&autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: name}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}},
			metav1.UpdateOptions{FieldManager: "kubectl"})
		if err != nil {
			return err
		}
		w, err := deployments.Watch(ctx, watchFrom("web", scaled.ResourceVersion))
		if err != nil {
			return err
		}
		healed, err := awaitEvent(ctx, w, "drift healed back to 1 replica", func(o runtime.Object) (bool, string) {
			d, ok := o.(*appsv1.Deployment)
			if !ok || d.Spec.Replicas == nil {
				return false, ""
			}
			return *d.Spec.Replicas == 1, fmt.Sprintf("%d replicas", *d.Spec.Replicas)
		})
		if err != nil {
			return err
		}
		took := healed.Sub(start).Seconds()
		// Let the heal's sync finish before the next edit.
		if err := e.waitSynced(ctx, name, "", time.Minute, 20*time.Millisecond); err != nil {
			return err
		}
		// Wait out the self-heal backoff: a refresh that finds the app
		// Synced resets it.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(b3RefreshSeconds*time.Second + 1500*time.Millisecond):
		}
		if i == 0 {
			slog.Info("B3 warm-up", "seconds", took)
			continue
		}
		xs = append(xs, took)
	}
	latencies(res, "B3", xs)
	if histories != "" {
		return writeSampleHistories(ctx, e, histories, name)
	}
	return nil
}

// watchFrom watches one object by name from resource version rv.
func watchFrom(name, rv string) metav1.ListOptions {
	return metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: rv}
}

// awaitEvent reads w until an object satisfies done (which also describes
// the object's state), and returns when that event arrived; it stops w.
// B2 and B3 watch for the change they time rather than poll: a GET every
// few milliseconds loads the API server whose answer they time.
func awaitEvent(ctx context.Context, w watch.Interface, what string, done func(runtime.Object) (bool, string)) (time.Time, error) {
	defer w.Stop()
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	last := "no change seen"
	for {
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-timeout.C:
			return time.Time{}, fmt.Errorf("timed out after 1m0s waiting for %s; last state: %s", what, last)
		case ev, open := <-w.ResultChan():
			if !open {
				return time.Time{}, fmt.Errorf("waiting for %s: the watch ended; last state: %s", what, last)
			}
			if st, ok := ev.Object.(*metav1.Status); ok {
				return time.Time{}, fmt.Errorf("waiting for %s: %s", what, st.Message)
			}
			ok, state := done(ev.Object)
			if ok {
				return time.Now(), nil
			}
			if state != "" {
				last = state
			}
		}
	}
}
