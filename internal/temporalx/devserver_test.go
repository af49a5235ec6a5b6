//go:build !nodevserver

package temporalx

import (
	"context"
	"database/sql"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	persistencespb "go.temporal.io/server/api/persistence/v1"
	"google.golang.org/protobuf/proto"
	_ "modernc.org/sqlite"
)

const (
	testTaskQueue = "temporalx-test"
	testSAName    = "WindlassApp"
)

var testSA = temporal.NewSearchAttributeKeyKeyword(testSAName)

func greetActivity(_ context.Context, name string) (string, error) {
	return "hello " + name, nil
}

func greetWorkflow(ctx workflow.Context, name string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var out string
	err := workflow.ExecuteActivity(ctx, greetActivity, name).Get(ctx, &out)
	return out, err
}

// signalledGreetWorkflow waits for a "name" signal, then greets like
// greetWorkflow. It lets a workflow run across a server restart.
func signalledGreetWorkflow(ctx workflow.Context) (string, error) {
	var name string
	workflow.GetSignalChannel(ctx, "name").Receive(ctx, &name)
	return greetWorkflow(ctx, name)
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func startTestServer(t *testing.T, cfg DevServerConfig) *DevServer {
	t.Helper()
	began := time.Now()
	srv, err := StartDevServer(t.Context(), cfg)
	if err != nil {
		t.Fatalf("StartDevServer: %v", err)
	}
	t.Logf("dev server started in %s on %s, ui %s", time.Since(began), srv.FrontendAddr(), srv.UIURL())
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return srv
}

func dialTestServer(t *testing.T, srv *DevServer) client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, ClientConfig{HostPort: srv.FrontendAddr(), Namespace: srv.Namespace(), Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	return c
}

func startTestWorker(t *testing.T, c client.Client) worker.Worker {
	t.Helper()
	w := worker.New(c, testTaskQueue, worker.Options{})
	w.RegisterWorkflow(greetWorkflow)
	w.RegisterWorkflow(signalledGreetWorkflow)
	w.RegisterActivity(greetActivity)
	if err := w.Start(); err != nil {
		t.Fatalf("worker start: %v", err)
	}
	return w
}

func TestDevServerRestartKeepsState(t *testing.T) {
	dir := t.TempDir()
	cfg := DevServerConfig{
		DataDir:          dir,
		FrontendAddr:     "127.0.0.1:0",
		UIAddr:           "127.0.0.1:0",
		SearchAttributes: map[string]enums.IndexedValueType{testSAName: enums.INDEXED_VALUE_TYPE_KEYWORD},
		Logger:           testLogger(t),
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	// First life: run a workflow to completion, and start one that waits.
	srv := startTestServer(t, cfg)
	if srv.Namespace() != "default" {
		t.Errorf("Namespace() = %q, want default", srv.Namespace())
	}
	checkUI(t, srv.UIURL())

	c := dialTestServer(t, srv)
	w := startTestWorker(t, c)
	began := time.Now()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    "greet-1",
		TaskQueue:             testTaskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(testSA.ValueSet("demo")),
	}, greetWorkflow, "windlass")
	if err != nil {
		t.Fatalf("ExecuteWorkflow: %v", err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatalf("workflow result: %v", err)
	}
	t.Logf("first workflow took %s", time.Since(began))
	if got != "hello windlass" {
		t.Fatalf("result = %q, want %q", got, "hello windlass")
	}
	waiting, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        "greet-across-restart",
		TaskQueue: testTaskQueue,
	}, signalledGreetWorkflow)
	if err != nil {
		t.Fatalf("ExecuteWorkflow (signalled): %v", err)
	}

	// Stopping the worker in the middle of the first workflow task would
	// leave that task to time out (10 s) after the restart.
	waitWorkflowIdle(t, c, waiting.GetID())
	checkDatabase(t, filepath.Join(dir, "temporal.db"))

	w.Stop()
	c.Close()
	began = time.Now()
	if err := srv.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("dev server stopped in %s", time.Since(began))

	// Second life on the same data dir, with one more search attribute: the
	// namespace exists, so this one goes through the operator service.
	cfg.SearchAttributes = map[string]enums.IndexedValueType{
		testSAName:    enums.INDEXED_VALUE_TYPE_KEYWORD,
		"WindlassEnv": enums.INDEXED_VALUE_TYPE_KEYWORD,
	}
	srv = startTestServer(t, cfg)
	c = dialTestServer(t, srv)
	defer c.Close()

	desc, err := c.DescribeWorkflowExecution(ctx, "greet-1", run.GetRunID())
	if err != nil {
		t.Fatalf("DescribeWorkflowExecution after restart: %v", err)
	}
	if st := desc.GetWorkflowExecutionInfo().GetStatus(); st != enums.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Errorf("status after restart = %s, want completed", st)
	}
	var sa string
	if p := desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[testSAName]; p == nil {
		t.Errorf("search attribute %s missing on the workflow after restart", testSAName)
	} else if err := converter.GetDefaultDataConverter().FromPayload(p, &sa); err != nil || sa != "demo" {
		t.Errorf("search attribute %s = %q (%v), want demo", testSAName, sa, err)
	}
	got = ""
	if err := c.GetWorkflow(ctx, "greet-1", run.GetRunID()).Get(ctx, &got); err != nil || got != "hello windlass" {
		t.Errorf("result after restart = %q, %v; want %q", got, err, "hello windlass")
	}

	list, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: srv.Namespace()})
	if err != nil {
		t.Fatalf("ListSearchAttributes: %v", err)
	}
	for name := range cfg.SearchAttributes {
		if typ := list.GetCustomAttributes()[name]; typ != enums.INDEXED_VALUE_TYPE_KEYWORD {
			t.Errorf("search attribute %s after restart has type %s, want keyword", name, typ)
		}
	}

	// The workflow started in the first life finishes in the second.
	began = time.Now()
	w = startTestWorker(t, c)
	defer w.Stop()
	if err := c.SignalWorkflow(ctx, waiting.GetID(), waiting.GetRunID(), "name", "again"); err != nil {
		t.Fatalf("SignalWorkflow: %v", err)
	}
	got = ""
	if err := c.GetWorkflow(ctx, waiting.GetID(), waiting.GetRunID()).Get(ctx, &got); err != nil || got != "hello again" {
		t.Errorf("signalled result = %q, %v; want %q", got, err, "hello again")
	}
	t.Logf("workflow carried across the restart finished %s after the signal", time.Since(began))
}

// waitWorkflowIdle waits until the workflow has completed a workflow task and
// has none pending.
func waitWorkflowIdle(t *testing.T, c client.Client, id string) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		desc, err := c.DescribeWorkflowExecution(t.Context(), id, "")
		if err != nil {
			t.Fatalf("DescribeWorkflowExecution: %v", err)
		}
		// Started, task scheduled, started, completed.
		if desc.GetPendingWorkflowTask() == nil && desc.GetWorkflowExecutionInfo().GetHistoryLength() >= 4 {
			return
		}
		select {
		case <-t.Context().Done():
			t.Fatal("workflow never became idle")
		case <-tick.C:
		}
	}
}

func checkUI(t *testing.T, url string) {
	t.Helper()
	if url == "" {
		t.Fatal("UIURL() is empty with the UI on")
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s/: %v", url, err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s/ = %s, want 200", url, resp.Status)
	}
}

// checkDatabase reads the file the way any SQLite client would: the journal
// mode is persistent in a WAL database, and the shard count is in the cluster
// metadata.
func checkDatabase(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := t.Context()

	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatalf("PRAGMA journal_mode: %v", err)
	}
	if mode != "wal" {
		t.Errorf("journal_mode = %q, want wal", mode)
	}

	var blob []byte
	var encoding string
	if err := db.QueryRowContext(ctx, "SELECT data, data_encoding FROM cluster_metadata_info").Scan(&blob, &encoding); err != nil {
		t.Fatalf("read cluster metadata: %v", err)
	}
	var md persistencespb.ClusterMetadata
	if err := proto.Unmarshal(blob, &md); err != nil {
		t.Fatalf("decode cluster metadata (%s): %v", encoding, err)
	}
	if md.GetHistoryShardCount() != 4 {
		t.Errorf("history shard count = %d, want 4", md.GetHistoryShardCount())
	}
}

func TestDevServerUIOff(t *testing.T) {
	srv := startTestServer(t, DevServerConfig{
		DataDir:      t.TempDir(),
		Namespace:    "other",
		FrontendAddr: "127.0.0.1:0",
		UIAddr:       "off",
		Logger:       testLogger(t),
	})
	if srv.UIURL() != "" {
		t.Errorf("UIURL() = %q with the UI off", srv.UIURL())
	}
	c := dialTestServer(t, srv)
	defer c.Close()
	resp, err := c.WorkflowService().DescribeNamespace(t.Context(), &workflowservice.DescribeNamespaceRequest{Namespace: "other"})
	if err != nil {
		t.Fatalf("DescribeNamespace: %v", err)
	}
	if r := resp.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration(); r != DefaultRetention {
		t.Errorf("retention = %s, want %s", r, DefaultRetention)
	}
	if st := resp.GetConfig().GetHistoryArchivalState(); st == enums.ARCHIVAL_STATE_ENABLED {
		t.Errorf("history archival %s without an archive", st)
	}
}
