package ui

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// envScale turns TestListScale on with that many applications.
const envScale = "WINDLASS_UI_SCALE"

// scaleQueue is polled by no worker: the scale test's applications exist
// in visibility, with their status in search attributes, but never run.
const scaleQueue = "ui-scale-no-worker"

// firstPageBudget is what the issue asks of the list's first page.
const firstPageBudget = time.Second

// scaleApp is the i-th application of the scale run: names, namespaces and
// statuses spread as in a real fleet.
func scaleApp(i int) (appspec.Application, temporal.SearchAttributes) {
	teams := []string{"payments", "catalog", "checkout", "search", "accounts", "shipping", "reviews", "ads"}
	team := teams[i%len(teams)]
	app := appspec.Application{
		Name: fmt.Sprintf("%s-svc-%04d", team, i), Project: appspec.DefaultProject,
		Source:      appspec.Source{RepoURL: "https://git.example.com/" + team + "/deploy.git", Path: fmt.Sprintf("svc-%04d", i)},
		Destination: appspec.Destination{Server: appspec.InClusterServer, Namespace: team},
	}
	sync, health := appspec.SyncSynced, appspec.HealthHealthy
	switch n := i * 37 % 100; {
	case n < 12:
		sync = appspec.SyncOutOfSync
	case n < 18:
		health = appspec.HealthProgressing
	case n < 22:
		sync, health = appspec.SyncOutOfSync, appspec.HealthDegraded
	case n < 24:
		sync, health = appspec.SyncUnknown, appspec.HealthUnknown
	}
	sha := sha1.Sum([]byte(app.Name))
	key := temporal.NewSearchAttributeKeyKeyword
	return app, temporal.NewSearchAttributes(
		key(workflows.SearchAttrProject).ValueSet(app.Project),
		key(workflows.SearchAttrApp).ValueSet(app.Project+"/"+app.Name),
		key(workflows.SearchAttrName).ValueSet(app.Name),
		key(workflows.SearchAttrSync).ValueSet(string(sync)),
		key(workflows.SearchAttrHealth).ValueSet(string(health)),
		key(workflows.SearchAttrRev).ValueSet(hex.EncodeToString(sha[:])),
		key(workflows.SearchAttrCluster).ValueSet(app.Destination.Server),
		key(workflows.SearchAttrNamespace).ValueSet(app.Destination.Namespace),
	)
}

// startScaleApps starts n application workflows that no worker runs, 16
// at a time.
func startScaleApps(ctx context.Context, n int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				app, sa := scaleApp(i)
				_, err := bed.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
					ID: workflows.AppWorkflowID(app.Project, app.Name), TaskQueue: scaleQueue, TypedSearchAttributes: sa,
				}, workflows.ApplicationWorkflowName, workflows.AppInput{Spec: app})
				if err != nil {
					errs <- fmt.Errorf("start %s: %w", app.Name, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// scaleResult is what scale.mjs measured.
type scaleResult struct {
	// FirstPageMs are the times from navigation start to the first page
	// of the list on screen (the UI's performance mark), cold (no cache)
	// first, then reloads.
	ColdMs float64   `json:"coldMs"`
	WarmMs []float64 `json:"warmMs"`
	// NextMs are the times from a click on Next to the next page on screen.
	NextMs []float64 `json:"nextMs"`
	// APIMs are the times of GET /api/v1/applications?limit=50.
	APIMs []float64 `json:"apiMs"`
	Rows  int       `json:"rows"`
}

// TestListScale measures the list's first page in the browser with
// WINDLASS_UI_SCALE applications (5000 for the figure in
// docs/benchmarks.md): too heavy for make test, so it runs only when asked.
func TestListScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(envScale))
	if n <= 0 {
		t.Skipf("set %s=5000 to measure the list with that many applications", envScale)
	}
	requireBrowser(t)
	ctx := t.Context()
	start := time.Now()
	if err := startScaleApps(ctx, n); err != nil {
		t.Fatal(err)
	}
	t.Logf("started %d applications in %s", n, time.Since(start).Round(time.Millisecond))
	query := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", workflows.ApplicationWorkflowName)
	deadline := time.Now().Add(5 * time.Minute)
	for {
		c, err := bed.temporal.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: bed.namespace, Query: query})
		if err == nil && c.GetCount() >= int64(n) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("visibility lists %d of %d applications after 5 min (%v)", c.GetCount(), n, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("visibility lists them after %s", time.Since(start).Round(time.Millisecond))
	shots := os.Getenv(envScreenshots)
	if shots == "" {
		shots = t.TempDir()
	}
	out := runScript(t, 5*time.Minute, "scale.mjs", map[string]string{
		"WINDLASS_URL": bed.api.URL, "WINDLASS_ADMIN_PASSWORD": bed.adminPassword,
		"WINDLASS_SCREENSHOTS": shots, "CHROMIUM": chromiumPath(),
	})
	var res scaleResult
	for _, line := range strings.Split(out, "\n") {
		if js, ok := strings.CutPrefix(line, "RESULT "); ok {
			if err := json.Unmarshal([]byte(js), &res); err != nil {
				t.Fatal(err)
			}
		}
	}
	if res.Rows == 0 {
		t.Fatalf("scale.mjs reported no result:\n%s", out)
	}
	t.Logf("%d applications: first page cold %.0f ms, warm %v ms; next page %v ms; API %v ms", n, res.ColdMs, res.WarmMs, res.NextMs, res.APIMs)
	if budget := float64(firstPageBudget.Milliseconds()); res.ColdMs > budget || median(res.WarmMs) > budget {
		t.Errorf("the first page takes more than %s: cold %.0f ms, warm median %.0f ms", firstPageBudget, res.ColdMs, median(res.WarmMs))
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
