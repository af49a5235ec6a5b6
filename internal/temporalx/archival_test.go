//go:build !nodevserver

package temporalx

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// testRetention is short enough that a test sees retention delete a
// workflow.
const testRetention = 2 * time.Second

func TestArchivalFilestore(t *testing.T) {
	dir := t.TempDir()
	arc := FileArchival(filepath.Join(dir, "archive"))
	srv := startTestServer(t, DevServerConfig{DataDir: filepath.Join(dir, "temporal"), Retention: testRetention, Archival: arc, Logger: testLogger(t)})
	checkArchived(t, srv, "archived-file")

	// The archive is plain files under the configured directory.
	var files int
	_ = filepath.WalkDir(filepath.Join(dir, "archive"), func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files++
		}
		return nil
	})
	if files < 2 {
		t.Errorf("archive holds %d files, want a history and a visibility record at least", files)
	}
}

// TestArchivalFilestoreOnPostgres: a cluster member on PostgreSQL archives
// a closed workflow to a filestore archive, and reads it back once
// retention has deleted it from the database.
func TestArchivalFilestoreOnPostgres(t *testing.T) {
	pg := testPostgres(t)
	archive := filepath.Join(t.TempDir(), "archive")
	cfg := clusterTestConfig(t, pg, testDatabase(t))
	cfg.Retention = testRetention
	cfg.Archival = FileArchival(archive)
	srv := startClusterTestServer(t, cfg)
	checkArchived(t, srv, "archived-pg")

	for _, sub := range []string{"history", "visibility"} {
		entries, err := os.ReadDir(filepath.Join(archive, sub))
		if err != nil || len(entries) == 0 {
			t.Errorf("%s archive: %d entries, %v; want the workflow's record", sub, len(entries), err)
		}
	}
}

func TestArchivalS3(t *testing.T) {
	backend := s3mem.New()
	if err := backend.CreateBucket("windlass-archive"); err != nil {
		t.Fatal(err)
	}
	s3 := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(s3.Close)
	// The archiver takes credentials from the AWS SDK's default chain.
	t.Setenv("AWS_ACCESS_KEY_ID", "test-key")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
	arc := &ArchivalConfig{
		HistoryURI: "s3://windlass-archive/history", VisibilityURI: "s3://windlass-archive/visibility",
		S3: S3Archive{Region: "us-east-1", Endpoint: s3.URL, PathStyle: true},
	}
	srv := startTestServer(t, DevServerConfig{DataDir: t.TempDir(), Retention: testRetention, Archival: arc, Logger: testLogger(t)})
	checkArchived(t, srv, "archived-s3")

	objs, err := backend.ListBucket("windlass-archive", nil, gofakes3.ListBucketPage{})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs.Contents) < 2 {
		t.Errorf("bucket holds %d objects, want a history and a visibility record at least", len(objs.Contents))
	}
}

// checkArchived runs a workflow, waits until retention has deleted it, and
// reads its visibility record and history back from the archive.
func checkArchived(t *testing.T, srv *DevServer, id string) {
	t.Helper()
	// The worker and client stop before the test ends: their loggers
	// write to the test's output.
	c := dialTestServer(t, srv)
	defer c.Close()
	w := startTestWorker(t, c)
	defer w.Stop()
	ctx := t.Context()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: testTaskQueue}, greetWorkflow, "archive")
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(90 * time.Second)
	for {
		_, err := c.DescribeWorkflowExecution(ctx, id, run.GetRunID())
		if _, ok := errors.AsType[*serviceerror.NotFound](err); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retention did not delete %s (last: %v)", id, err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	var archived *workflowservice.ListArchivedWorkflowExecutionsResponse
	for {
		archived, err = c.ListArchivedWorkflow(ctx, &workflowservice.ListArchivedWorkflowExecutionsRequest{
			Namespace: srv.Namespace(), PageSize: 10, Query: "WorkflowId = '" + id + "'",
		})
		if err == nil && len(archived.GetExecutions()) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("archived visibility of %s: %v %v", id, archived, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	e := archived.GetExecutions()[0]
	if e.GetExecution().GetRunId() != run.GetRunID() || e.GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Errorf("archived record = %v, want run %s completed", e, run.GetRunID())
	}

	it := c.GetWorkflowHistory(ctx, id, run.GetRunID(), false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var types []string
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("archived history of %s: %v", id, err)
		}
		types = append(types, ev.GetEventType().String())
	}
	if len(types) == 0 || types[0] != "WorkflowExecutionStarted" || types[len(types)-1] != "WorkflowExecutionCompleted" {
		t.Errorf("archived history = %v, want started ... completed", types)
	}
}

func TestArchivalRefusesBadArchive(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		arc  *ArchivalConfig
		want string
	}{
		// /proc/self is a directory nobody, root included, can create files in.
		{"directory not writable", &ArchivalConfig{HistoryURI: "file:///proc/self", VisibilityURI: "file:///proc/self"}, "archive directory /proc/self is not writable"},
		{"path through a file", FileArchival(filepath.Join(file, "archive")), "archive directory " + file + "/archive/history is not writable"},
		{"relative path", &ArchivalConfig{HistoryURI: "file://archive", VisibilityURI: "file://archive"}, "want file:///<absolute directory>"},
		{"unknown scheme", &ArchivalConfig{HistoryURI: "gs://b", VisibilityURI: "gs://b"}, "scheme must be file or s3"},
		{"s3 without region", &ArchivalConfig{HistoryURI: "s3://b", VisibilityURI: "s3://b"}, "an S3 region is required"},
		{"missing URI", &ArchivalConfig{HistoryURI: "s3://b", S3: S3Archive{Region: "r"}}, "visibility archive: URI is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "temporal")
			_, err := StartDevServer(t.Context(), DevServerConfig{DataDir: data, Archival: tc.arc, UIAddr: "off", FrontendAddr: "127.0.0.1:0", Logger: testLogger(t)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("StartDevServer error = %v, want %q", err, tc.want)
			}
			// Refused before anything was written: no database, no history
			// to lose.
			if _, err := os.Stat(filepath.Join(data, dbFileName)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("database exists after a refused start: %v", err)
			}
		})
	}
}

// A cluster member refuses an unwritable archive before it touches
// PostgreSQL: nothing listens at the DSN, and the archive is named.
func TestClusterArchivalRefusesBadArchive(t *testing.T) {
	cfg := ClusterServerConfig{
		Postgres: PostgresConfig{DSN: "postgres://windlass@127.0.0.1:1/temporal", Password: "x"},
		Archival: &ArchivalConfig{HistoryURI: "file:///proc/self", VisibilityURI: "file:///proc/self"},
		Logger:   testLogger(t),
	}
	_, err := StartClusterServer(t.Context(), cfg)
	if want := "archive directory /proc/self is not writable"; err == nil || !strings.Contains(err.Error(), want) || errors.Is(err, ErrPostgresUnreachable) {
		t.Fatalf("StartClusterServer error = %v, want %q before any connection", err, want)
	}
}

// A restart brings an existing namespace's retention and archival to the
// configuration.
func TestArchivalNamespaceUpdatedOnRestart(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "temporal")
	srv := startTestServer(t, DevServerConfig{DataDir: data, UIAddr: "off", FrontendAddr: "127.0.0.1:0", Logger: testLogger(t)})
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	arc := FileArchival(filepath.Join(dir, "archive"))
	srv = startTestServer(t, DevServerConfig{DataDir: data, Retention: time.Hour, Archival: arc, UIAddr: "off", FrontendAddr: "127.0.0.1:0", Logger: testLogger(t)})
	c := dialTestServer(t, srv)
	resp, err := c.WorkflowService().DescribeNamespace(t.Context(), &workflowservice.DescribeNamespaceRequest{Namespace: srv.Namespace()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := resp.GetConfig()
	got := []any{cfg.GetWorkflowExecutionRetentionTtl().AsDuration(), cfg.GetHistoryArchivalState(), cfg.GetHistoryArchivalUri(), cfg.GetVisibilityArchivalState(), cfg.GetVisibilityArchivalUri()}
	want := []any{time.Hour, enums.ARCHIVAL_STATE_ENABLED, arc.HistoryURI, enums.ARCHIVAL_STATE_ENABLED, arc.VisibilityURI}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("namespace retention and archival = %v, want %v", got, want)
	}
}

func TestArchivalURICannotMove(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "temporal")
	srv := startTestServer(t, DevServerConfig{DataDir: data, Archival: FileArchival(filepath.Join(dir, "a")), UIAddr: "off", FrontendAddr: "127.0.0.1:0", Logger: testLogger(t)})
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	moved, err := StartDevServer(ctx, DevServerConfig{DataDir: data, Archival: FileArchival(filepath.Join(dir, "b")), UIAddr: "off", FrontendAddr: "127.0.0.1:0", Logger: testLogger(t)})
	if err == nil {
		_ = moved.Stop()
		t.Fatal("a moved archive URI was accepted")
	}
	if want := "Temporal cannot move an archive"; !strings.Contains(err.Error(), want) {
		t.Errorf("error = %v, want %q", err, want)
	}
}
