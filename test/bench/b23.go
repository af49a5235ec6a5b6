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

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
		start := time.Now()
		if err := e.sendGitHubPush(ctx, repoURL, sha); err != nil {
			return err
		}
		err = poll(ctx, time.Minute, 5*time.Millisecond, "ConfigMap version "+version+" live", func() (bool, string, error) {
			cm, err := e.kube.CoreV1().ConfigMaps(name).Get(ctx, "settings", metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			return cm.Data["version"] == version, "version " + cm.Data["version"], nil
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
		_, err := deployments.UpdateScale(ctx, "web",
			&autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: name}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}},
			metav1.UpdateOptions{FieldManager: "kubectl"})
		if err != nil {
			return err
		}
		err = poll(ctx, time.Minute, 5*time.Millisecond, "drift healed back to 1 replica", func() (bool, string, error) {
			d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			return *d.Spec.Replicas == 1, fmt.Sprintf("%d replicas", *d.Spec.Replicas), nil
		})
		if err != nil {
			return err
		}
		took := time.Since(start).Seconds()
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
