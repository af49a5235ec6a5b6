package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/api/auth"
	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/internal/temporalx"
	"github.com/windlass-cd/windlass/worker"
	"github.com/windlass-cd/windlass/workflows"
)

// archiveRetention is the retention of the archival test's namespace:
// short enough to watch it expire syncs.
const archiveRetention = 20 * time.Second

// archivalBed is a namespace with a short retention, archived to the
// e2e server's filestore archive, with its own worker and API server.
type archivalBed struct {
	url, token string
	c          client.Client
}

func (b archivalBed) call(t *testing.T, method, path string, body, out any) int {
	t.Helper()
	return callBase(t, b.url, b.token, method, path, body, out)
}

// startArchivalBed registers a namespace that archives to the e2e
// server's archive and starts a worker and an API server on it.
func startArchivalBed(t *testing.T) archivalBed {
	t.Helper()
	ctx := t.Context()
	ns := uniq("e2e-archive")
	arc := temporalx.FileArchival(bed.archive)
	if _, err := bed.temporal.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: ns, WorkflowExecutionRetentionPeriod: durationpb.New(archiveRetention),
		HistoryArchivalState: enums.ARCHIVAL_STATE_ENABLED, HistoryArchivalUri: arc.HistoryURI,
		VisibilityArchivalState: enums.ARCHIVAL_STATE_ENABLED, VisibilityArchivalUri: arc.VisibilityURI,
	}); err != nil {
		t.Fatalf("register namespace: %v", err)
	}
	c, err := temporalx.Dial(ctx, temporalx.ClientConfig{HostPort: bed.temporalAddr, Namespace: ns, Logger: bed.log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	// The frontend knows a new namespace once its registry refreshes.
	eventually(t, 60*time.Second, "search attributes registered", func() (bool, string) {
		_, err := temporalx.EnsureSearchAttributes(ctx, c, ns, worker.SearchAttributes())
		return err == nil, fmt.Sprint(err)
	})
	rdb := redis.NewClient(&redis.Options{Addr: bed.env.RedisAddr})
	t.Cleanup(func() { _ = rdb.Close() })
	w, err := worker.New(worker.Config{
		Settings: bed.settings, Client: c, CacheDir: t.TempDir(), Redis: rdb,
		Kube: bed.env.Cluster.Config, Logger: bed.log, Namespace: ns,
		Credentials: source.Credentials{Repos: []source.RepoCredential{
			{URLPrefix: bed.authGit.URL(""), Username: "deploy", PasswordFile: bed.secretFile},
		}},
		AppConfig: workflows.AppConfig{RefreshSeconds: 600, SyncTimeoutSeconds: 120},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	authSvc, err := auth.New(auth.Config{}, bed.store, auth.RedisRevocations{Client: rdb}, bed.log)
	if err != nil {
		t.Fatal(err)
	}
	enf, err := rbac.New(rbac.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(c, api.Options{
		Logger: bed.log, Namespace: ns, Auth: authSvc, RBAC: enf, Settings: bed.settings,
		AppConfig:     workflows.AppConfig{RefreshSeconds: 600, SyncTimeoutSeconds: 120},
		TemporalUIURL: "http://temporal-ui.test",
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	var session struct {
		Token string `json:"token"`
	}
	if code := callBase(t, ts.URL, "", http.MethodPost, "/api/v1/session", map[string]string{"username": auth.AdminAccount, "password": bed.adminPassword}, &session); code != http.StatusOK {
		t.Fatalf("login: status %d", code)
	}
	return archivalBed{url: ts.URL, token: session.Token, c: c}
}

// Syncs outlive retention: once Temporal has deleted them they still list
// (from the archive) with their full event history, a rollback to the
// oldest restores its image although the app no longer keeps it, and
// the archive holds no secret.
func TestArchivedSyncsListAndRollBack(t *testing.T) {
	b := startArchivalBed(t)
	ns, name := uniq("arc"), uniq("archived")
	work, body := privateGuestbook(t, ns, name)
	body["revisionHistoryLimit"] = 1 // the app keeps only its last sync
	if code := b.call(t, http.MethodPost, "/api/v1/applications", body, nil); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	app := "/api/v1/applications/" + name
	sync := func() workflows.SyncResult {
		t.Helper()
		var res workflows.SyncResult
		if code := b.call(t, http.MethodPost, app+"/sync", nil, &res); code != http.StatusOK || res.Phase != workflows.PhaseSucceeded {
			t.Fatalf("sync: status %d, result %+v", code, res)
		}
		return res
	}
	var results []workflows.SyncResult
	for i, tag := range []string{"0.1", "0.2", "0.3"} {
		if i > 0 {
			push(t, work, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:"+tag))
			b.call(t, http.MethodPost, app+"/refresh", nil, nil)
		}
		results = append(results, sync())
		eventually(t, 60*time.Second, "image "+tag+" live", func() (bool, string) { i := image(t, ns); return strings.HasSuffix(i, ":"+tag), i })
	}

	// Retention deletes the three syncs from Temporal.
	eventually(t, 3*time.Minute, "syncs deleted by retention", func() (bool, string) {
		for _, r := range results {
			_, err := b.c.DescribeWorkflowExecution(t.Context(), r.ID, "")
			if _, ok := errors.AsType[*serviceerror.NotFound](err); !ok {
				return false, fmt.Sprintf("%s: %v", r.ID, err)
			}
		}
		return true, ""
	})
	want := []string{results[2].ID, results[1].ID, results[0].ID}
	eventually(t, time.Minute, "archived syncs listed", func() (bool, string) {
		items := listAllSyncs(t, b, app, 2)
		return slices.Equal(syncIDs(items), want), fmt.Sprint(syncIDs(items))
	})
	for i, r := range listAllSyncs(t, b, app, 100) {
		past := results[2-i]
		if r.Source != api.SourceArchived || r.TemporalURL != "" || r.SHA != past.SHA || r.Status != "Completed" || r.RunID == "" {
			t.Errorf("sync %s = %+v, want archived, no Temporal UI link, at %s", r.ID, r, past.SHA)
		}
	}

	// Its full event history stays readable, from the archive.
	var ev api.SyncEvents
	if code := b.call(t, http.MethodGet, app+"/syncs/1/events", nil, &ev); code != http.StatusOK {
		t.Fatalf("events of sync 1: status %d", code)
	}
	if ev.Source != api.SourceArchived || ev.ID != results[0].ID || len(ev.Events) < 5 {
		t.Fatalf("events of sync 1: %s %s, %d events", ev.ID, ev.Source, len(ev.Events))
	}
	var first struct{ EventType string }
	if err := json.Unmarshal(ev.Events[0], &first); err != nil || first.EventType != "EVENT_TYPE_WORKFLOW_EXECUTION_STARTED" {
		t.Errorf("first archived event = %s (%v)", ev.Events[0], err)
	}
	for path, code := range map[string]int{app + "/syncs/99/events": http.StatusNotFound, app + "/syncs/x/events": http.StatusBadRequest} {
		if got := b.call(t, http.MethodGet, path, nil, nil); got != code {
			t.Errorf("GET %s: status %d, want %d", path, got, code)
		}
	}

	// The app keeps one sync; a rollback to the oldest reads it from the
	// archive.
	var rb workflows.SyncResult
	if code := b.call(t, http.MethodPost, app+"/rollback", map[string]any{"id": results[0].ID}, &rb); code != http.StatusOK {
		t.Fatalf("rollback to an archived sync: status %d, result %+v", code, rb)
	}
	if rb.SHA != results[0].SHA || rb.Phase != workflows.PhaseSucceeded || rb.ID != workflows.SyncWorkflowID("default", name, 4) {
		t.Fatalf("rollback result %+v, want sync 4 succeeded at %s", rb, results[0].SHA)
	}
	eventually(t, 60*time.Second, "image 0.1 live again", func() (bool, string) { i := image(t, ns); return strings.HasSuffix(i, ":0.1"), i })
	// Retained and archived syncs page as one list, each once.
	eventually(t, time.Minute, "four syncs listed once each", func() (bool, string) {
		items := listAllSyncs(t, b, app, 1)
		return slices.Equal(syncIDs(items), append([]string{rb.ID}, want...)), fmt.Sprint(syncIDs(items))
	})

	// The archive holds the app's syncs, and no secret.
	files := scanArchive(t, [][]byte{[]byte(bed.secret)}, func(_ int, where string) {
		t.Fatalf("the repository secret is in the archive file %s", where)
	})
	if !archiveMentions(t, name) {
		t.Fatalf("no archive file names %s: the scan is not looking at the archive (%d files)", name, files)
	}
}

// listAllSyncs pages through the app's full sync history, limit at a time.
func listAllSyncs(t *testing.T, b archivalBed, app string, limit int) []api.SyncRecord {
	t.Helper()
	var out []api.SyncRecord
	cursor := ""
	for range 100 {
		var page api.SyncList
		if code := b.call(t, http.MethodGet, fmt.Sprintf("%s/syncs?limit=%d&cursor=%s", app, limit, cursor), nil, &page); code != http.StatusOK {
			t.Fatalf("list syncs: status %d", code)
		}
		if len(page.Items) > limit {
			t.Fatalf("a page of %d syncs, over the limit of %d", len(page.Items), limit)
		}
		out = append(out, page.Items...)
		if cursor = page.Next; cursor == "" {
			return out
		}
	}
	t.Fatal("the sync list does not end")
	return nil
}

func syncIDs(rs []api.SyncRecord) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

// scanArchive looks for each needle in every file of the e2e archive: in
// the bytes, and in every JSON string base64-decoded (Temporal's archive
// holds payloads as base64 in JSON). It returns how many files it read.
func scanArchive(t *testing.T, needles [][]byte, found func(i int, where string)) int {
	t.Helper()
	files := 0
	err := filepath.WalkDir(bed.archive, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		texts := [][]byte{data}
		var doc any
		if json.Unmarshal(data, &doc) == nil {
			jsonStrings(doc, func(s string) {
				if dec, err := base64.StdEncoding.DecodeString(s); err == nil {
					texts = append(texts, dec)
				}
			})
		}
		for i, n := range needles {
			for _, text := range texts {
				if bytes.Contains(text, n) {
					found(i, path)
				}
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return files
}

// archiveMentions says whether an archive file holds s.
func archiveMentions(t *testing.T, s string) bool {
	t.Helper()
	seen := false
	scanArchive(t, [][]byte{[]byte(s)}, func(int, string) { seen = true })
	return seen
}

// jsonStrings calls f with every string in a decoded JSON document.
func jsonStrings(v any, f func(string)) {
	switch v := v.(type) {
	case string:
		f(v)
	case []any:
		for _, e := range v {
			jsonStrings(e, f)
		}
	case map[string]any:
		for _, e := range v {
			jsonStrings(e, f)
		}
	}
}
