package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// startListedApps starts application workflows (no worker runs them) named
// prefix0, prefix1, ... that the list finds by name, oldest first; they are
// terminated when the test ends. They carry no project or cluster search
// attribute, so that the project and cluster deletion checks of other
// tests do not see them.
func startListedApps(t *testing.T, prefix string, n int, memo map[string]any) []string {
	t.Helper()
	var names []string
	for i := range n {
		app := appspec.Application{Name: fmt.Sprintf("%s%d", prefix, i), Project: appspec.DefaultProject,
			Source:      appspec.Source{RepoURL: "https://git.example.com/default/list.git", Path: "."},
			Destination: appspec.Destination{Server: appspec.InClusterServer, Namespace: "list"}}
		id := workflows.AppWorkflowID(app.Project, app.Name)
		_, err := bed.temporal.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{
			ID: id, TaskQueue: noWorkerQueue, Memo: memo,
			TypedSearchAttributes: temporal.NewSearchAttributes(temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrName).ValueSet(app.Name)),
		}, workflows.ApplicationWorkflowName, workflows.AppInput{Spec: app.Defaulted()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = bed.temporal.TerminateWorkflow(context.Background(), id, "", "test over") })
		names = append(names, app.Project+"/"+app.Name)
	}
	return names
}

// streamEvents reads the events of an event stream for the given time and
// returns the data of each event by name.
func streamEvents(t *testing.T, en *env, path string, d time.Duration) map[string][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, en.http.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+en.tokens["admin"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d", path, resp.StatusCode)
	}
	out := map[string][]string{}
	event := ""
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() { // ends with an error when the time is up
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			event = v
		} else if v, ok := strings.CutPrefix(line, "data: "); ok {
			out[event] = append(out[event], v)
		}
	}
	return out
}

// streamedApps decodes the application events of a list stream into
// <project>/<name>s.
func streamedApps(t *testing.T, events map[string][]string) []string {
	t.Helper()
	var got []string
	for _, d := range events[eventApplication] {
		var row AppSummary
		if err := json.Unmarshal([]byte(d), &row); err != nil {
			t.Fatalf("decode %s: %v", d, err)
		}
		got = append(got, row.Project+"/"+row.Name)
	}
	return got
}

// TestStreamAppsPage checks that the list's stream reads only the page it
// is asked for: with three apps and limit=2, the two newest; with the
// list's cursor of the next page, the third.
func TestStreamAppsPage(t *testing.T) {
	en := newEnv(t)
	prefix := fmt.Sprintf("stream-%d-", time.Now().UnixNano()%1_000_000)
	names := startListedApps(t, prefix, 3, nil)
	newest := slices.Clone(names)
	slices.Reverse(newest)
	list := "/api/v1/applications?search=" + prefix
	eventually(t, visibilityWait, func() error {
		if got := appNames(t, en.admin(request{method: http.MethodGet, path: list})); !slices.Equal(got, newest) {
			return fmt.Errorf("the list has %v, want %v", got, newest)
		}
		return nil
	})
	var first AppList
	en.admin(request{method: http.MethodGet, path: list + "&limit=2"}).decode(t, &first)
	if first.Next == "" {
		t.Fatalf("limit=2 of 3 apps: no next cursor in %+v", first)
	}
	// Two polls of the stream: rows of other pages would have come by.
	window := 2*streamListPoll + time.Second
	stream := "/api/v1/stream/applications?search=" + prefix
	if got := streamedApps(t, streamEvents(t, en, stream+"&limit=2", window)); !slices.Equal(got, newest[:2]) {
		t.Errorf("limit=2 streams %v, want %v", got, newest[:2])
	}
	if got := streamedApps(t, streamEvents(t, en, stream+"&limit=2&cursor="+first.Next, window)); !slices.Equal(got, newest[2:]) {
		t.Errorf("the second page streams %v, want %v", got, newest[2:])
	}
	res := en.admin(request{method: http.MethodGet, path: stream + "&limit=1001"})
	res.wantProblem(t, http.StatusBadRequest, "limit", "")
}

// TestListRowRevisionMessage checks that a list row, and the stream's,
// carries the commit subject the app workflow keeps in its memo.
func TestListRowRevisionMessage(t *testing.T) {
	en := newEnv(t)
	const subject = "guestbook: three replicas"
	prefix := fmt.Sprintf("subject-%d-", time.Now().UnixNano()%1_000_000)
	names := startListedApps(t, prefix, 1, map[string]any{workflows.MemoRevisionMessage: subject})
	var row AppSummary
	eventually(t, visibilityWait, func() error {
		var list AppList
		en.admin(request{method: http.MethodGet, path: "/api/v1/applications?search=" + prefix}).decode(t, &list)
		if len(list.Items) != 1 {
			return fmt.Errorf("the list has %d rows, want %v", len(list.Items), names)
		}
		row = list.Items[0]
		return nil
	})
	if row.RevisionMessage != subject {
		t.Errorf("revisionMessage %q, want %q", row.RevisionMessage, subject)
	}
	events := streamEvents(t, en, "/api/v1/stream/applications?search="+prefix, time.Second)
	if len(events[eventApplication]) != 1 || !strings.Contains(events[eventApplication][0], `"revisionMessage":"`+subject+`"`) {
		t.Errorf("the stream sends %v, want the row with its revisionMessage", events[eventApplication])
	}
}
