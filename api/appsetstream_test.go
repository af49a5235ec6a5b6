package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/windlass-cd/windlass/api/auth"
	"github.com/windlass-cd/windlass/internal/appset"
	"github.com/windlass-cd/windlass/workflows"
)

// startListedSet starts a set's workflow (no worker runs it) with the
// project and memo the list reads; it is terminated when the test ends.
func startListedSet(t *testing.T, name, project string, memo map[string]any) {
	t.Helper()
	id := workflows.AppSetWorkflowID(name)
	_, err := bed.temporal.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{
		ID: id, TaskQueue: noWorkerQueue, Memo: memo,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrProject).ValueSet(project),
			temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrName).ValueSet(name)),
	}, workflows.ApplicationSetWorkflowName, workflows.AppSetInput{Set: appset.ApplicationSet{Metadata: appset.Metadata{Name: name}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bed.temporal.TerminateWorkflow(context.Background(), id, "", "test over") })
}

// setStream reads the set list's stream as the token's caller, calling
// f with each event of a set named with prefix until f says stop.
func setStream(t *testing.T, en *env, token, prefix string, d time.Duration, f func(event string, row AppSetSummary, deleted string) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, en.http.URL+"/api/v1/stream/applicationsets", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: status %d", resp.StatusCode)
	}
	event := ""
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() { // ends with an error when the time is up
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			event = v
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var row AppSetSummary
		var gone string
		if event == eventDeleted {
			err = json.Unmarshal([]byte(data), &gone)
		} else {
			err = json.Unmarshal([]byte(data), &row)
		}
		if err != nil {
			t.Fatalf("decode %s %s: %v", event, data, err)
		}
		if !strings.HasPrefix(row.Name+gone, prefix) {
			continue
		}
		if f(event, row, gone) {
			return
		}
	}
}

// TestStreamAppSets checks the set list's stream: a row per set the
// caller may get, as the list has it (with its generators' names), then "deleted" when a set is gone;
// a caller without the permission gets no row.
func TestStreamAppSets(t *testing.T) {
	en := newEnv(t)
	prefix := fmt.Sprintf("setstream-%d-", time.Now().UnixNano()%1_000_000)
	a, b := prefix+"a", prefix+"b"
	startListedSet(t, a, "default", map[string]any{workflows.MemoAppSetApps: 3, workflows.MemoAppSetGenerated: 3,
		workflows.MemoAppSetGenerators: []string{"git directories envs apps/*"}})
	startListedSet(t, b, "team-a", map[string]any{workflows.MemoAppSetError: "generator: boom"})
	want := map[string]AppSetSummary{
		a: {Name: a, Project: "default", Apps: 3, Generated: 3, Generators: []string{"git directories envs apps/*"}},
		b: {Name: b, Project: "team-a", Error: "generator: boom"},
	}
	eventually(t, visibilityWait, func() error {
		var list AppSetList
		en.admin(request{method: http.MethodGet, path: "/api/v1/applicationsets"}).decode(t, &list)
		n := 0
		for _, r := range list.Items {
			if strings.HasPrefix(r.Name, prefix) {
				n++
			}
		}
		if n != 2 {
			return fmt.Errorf("the list has %d of the 2 sets", n)
		}
		return nil
	})

	got := map[string]AppSetSummary{}
	deleted := ""
	setStream(t, en, en.tokens[auth.AdminAccount], prefix, visibilityWait+5*time.Second, func(event string, row AppSetSummary, gone string) bool {
		switch {
		case event == eventDeleted:
			deleted = gone
			return true
		case event == eventAppSet:
			got[row.Name] = row
			if len(got) == 2 && deleted == "" {
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("streamed rows (-want +got):\n%s", diff)
				}
				if err := bed.temporal.TerminateWorkflow(t.Context(), workflows.AppSetWorkflowID(b), "", "deleted by the test"); err != nil {
					t.Fatal(err)
				}
			}
		}
		return false
	})
	if len(got) != 2 || deleted != b {
		t.Fatalf("streamed %d rows and deleted %q; want 2 rows, then %s deleted", len(got), deleted, b)
	}

	// No role: two polls of the stream bring no row of these sets.
	setStream(t, en, en.tokens[nobodyAccount], prefix, 2*streamListPoll+time.Second, func(event string, row AppSetSummary, gone string) bool {
		t.Errorf("a caller without applicationsets, get was sent %s %s%s", event, row.Name, gone)
		return true
	})
}
