package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// B7's app: 2,000 objects in one namespace.
const (
	b7ConfigMaps  = 1400
	b7Services    = 400
	b7Deployments = 200
)

// b7Files is the big app: one file per kind, documents separated by ---.
// Deployments have no replicas, so that the fake nodes' pod room does not
// bound the benchmark.
func b7Files() map[string]string {
	var cm, svc, dep strings.Builder
	for i := range b7ConfigMaps {
		fmt.Fprintf(&cm, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%04d\ndata:\n  key: %q\n", i, strings.Repeat("v", 64))
	}
	for i := range b7Services {
		fmt.Fprintf(&svc, "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: svc-%04d\nspec:\n  selector: {app: d-%04d}\n  ports:\n  - port: 80\n", i, i%b7Deployments)
	}
	for i := range b7Deployments {
		fmt.Fprintf(&dep, "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d-%04d\nspec:\n  replicas: 0\n  selector:\n    matchLabels: {app: d-%04d}\n  template:\n    metadata:\n      labels: {app: d-%04d}\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n", i, i, i)
	}
	return map[string]string{"big/configmaps.yaml": cm.String(), "big/services.yaml": svc.String(), "big/deployments.yaml": dep.String()}
}

// benchBigApp is B7: one app of 2,000 objects: the time from its create
// to Synced and Healthy (first sync), from a refresh to the reconcile that
// follows it (compare, with a warm render cache), and from a sync request
// with nothing to change to that sync's success (no-op re-sync).
func benchBigApp(ctx context.Context, e *env, res *results) error {
	name := "b7-big"
	repoURL, err := e.git.CreateRepo(name)
	if err != nil {
		return err
	}
	if _, err := e.pushFiles(ctx, name, repoURL, b7Files()); err != nil {
		return err
	}
	body := map[string]any{
		"name": name, "project": "default", "refreshSeconds": 3600,
		"source":      map[string]any{"repoURL": repoURL, "path": "big", "targetRevision": "main"},
		"destination": map[string]any{"server": appspec.InClusterServer, "namespace": name},
		"syncPolicy":  map[string]any{"syncOptions": []string{"CreateNamespace=true"}, "automated": map[string]any{}},
	}
	start := time.Now()
	if _, err := e.request(ctx, http.MethodPost, "/api/v1/applications", body, nil); err != nil {
		return err
	}
	if err := e.waitSynced(ctx, name, "", 10*time.Minute, 250*time.Millisecond); err != nil {
		return err
	}
	first := time.Since(start).Seconds()
	slog.Info("B7 first sync", "seconds", first)

	var compares, resyncs []float64
	for i := range 3 {
		v, err := e.appView(ctx, name)
		if err != nil {
			return err
		}
		at := v.Status.ReconciledAt
		start := time.Now()
		if _, err := e.request(ctx, http.MethodPost, "/api/v1/applications/"+name+"/refresh", nil, nil); err != nil {
			return err
		}
		err = poll(ctx, 5*time.Minute, 50*time.Millisecond, "the refresh's reconcile", func() (bool, string, error) {
			v, err := e.appView(ctx, name)
			if err != nil {
				return false, err.Error(), nil
			}
			return v.Status.ReconciledAt.After(at), string(v.Status.Sync), nil
		})
		if err != nil {
			return err
		}
		compares = append(compares, time.Since(start).Seconds())

		id := workflows.SyncWorkflowID("default", name, i+2)
		start = time.Now()
		if _, err := e.request(ctx, http.MethodPost, "/api/v1/applications/"+name+"/sync", map[string]any{}, nil); err != nil {
			return err
		}
		err = poll(ctx, 10*time.Minute, 100*time.Millisecond, "no-op re-sync "+id, func() (bool, string, error) {
			v, err := e.appView(ctx, name)
			if err != nil || len(v.History) == 0 {
				return false, fmt.Sprint(err), nil
			}
			h := v.History[0]
			if h.ID == id && (h.Phase == workflows.PhaseFailed || h.Phase == workflows.PhaseTerminated) {
				return false, "", fmt.Errorf("%s ended %s: %s", id, h.Phase, h.Message)
			}
			return h.ID == id && h.Phase == workflows.PhaseSucceeded && v.Status.Operation == nil, h.ID + "=" + h.Phase, nil
		})
		if err != nil {
			return err
		}
		resyncs = append(resyncs, time.Since(start).Seconds())
	}
	res.addRun("B7", map[string]any{"objects": b7ConfigMaps + b7Services + b7Deployments, "firstSyncSeconds": first,
		"compareSeconds": compares, "noopResyncSeconds": resyncs, "loadAverage": loadAverage()})
	res.emit("B7.first_sync", first, "s", 1)
	res.emit("B7.compare", median(compares), "s", len(compares))
	res.emit("B7.noop_resync", median(resyncs), "s", len(resyncs))
	return nil
}
