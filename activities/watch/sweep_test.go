package watch

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	workflowservice "go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/windlass-cd/windlass/internal/kube"
)

// sweepTemporal lists apps in pages of two and records the signals.
type sweepTemporal struct {
	mu      sync.Mutex
	apps    []*workflowpb.WorkflowExecutionInfo
	signals []string
}

func (f *sweepTemporal) ListWorkflow(_ context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	from := 0
	if len(req.NextPageToken) > 0 {
		from, _ = strconv.Atoi(string(req.NextPageToken))
	}
	to := min(from+2, len(f.apps))
	resp := &workflowservice.ListWorkflowExecutionsResponse{Executions: f.apps[from:to]}
	if to < len(f.apps) {
		resp.NextPageToken = []byte(strconv.Itoa(to))
	}
	return resp, nil
}

func (f *sweepTemporal) SignalWorkflow(_ context.Context, id, _, name string, arg any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := arg.(RefreshRequest); !ok || name != refreshSignal || !r.Live {
		return nil
	}
	f.signals = append(f.signals, id)
	return nil
}

// noClients serves no cluster: the sweep needs none.
type noClients struct{}

func (noClients) For(string) (*kube.Clients, error) { return nil, errors.New("no cluster") }

// sweptApp is a listed app whose memo gives refresh seconds (none: no
// field, as an app of 0.1.0).
func sweptApp(t *testing.T, id string, refresh ...int64) *workflowpb.WorkflowExecutionInfo {
	t.Helper()
	e := &workflowpb.WorkflowExecutionInfo{Execution: &commonpb.WorkflowExecution{WorkflowId: id}, Memo: &commonpb.Memo{Fields: map[string]*commonpb.Payload{}}}
	for _, r := range refresh {
		p, err := converter.GetDefaultDataConverter().ToPayload(r)
		if err != nil {
			t.Fatal(err)
		}
		e.Memo.Fields[MemoRefreshSeconds] = p
	}
	return e
}

// The sweep signals the apps its own interval outpaces, and leaves out
// those whose timer pass comes as often; without its interval it signals
// every app.
func TestSweepSelfHealLeavesOutAppsRefreshedAsOften(t *testing.T) {
	tests := []struct {
		name  string
		every time.Duration
		want  []string
	}{
		{name: "five minutes", every: 5 * time.Minute, want: []string{"app/default/hourly", "app/default/old"}},
		{name: "no interval", want: []string{"app/default/default", "app/default/five", "app/default/hourly", "app/default/old"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tmp := &sweepTemporal{apps: []*workflowpb.WorkflowExecutionInfo{
				sweptApp(t, "app/default/default", 180), sweptApp(t, "app/default/hourly", 3600),
				sweptApp(t, "app/default/five", 300), sweptApp(t, "app/default/old"),
			}}
			a, err := New(noClients{}, tmp, "default", "windlass", nil, WithSweepEvery(tc.every))
			if err != nil {
				t.Fatal(err)
			}
			env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
			a.Register(env)
			v, err := env.ExecuteActivity(SweepSelfHealName, SweepInput{Query: "q"})
			if err != nil {
				t.Fatal(err)
			}
			var out SweepOutput
			if err := v.Get(&out); err != nil {
				t.Fatal(err)
			}
			slices.Sort(tmp.signals)
			if !slices.Equal(tmp.signals, tc.want) {
				t.Errorf("signalled %v, want %v", tmp.signals, tc.want)
			}
			if out.Scanned != 4 || out.Apps != len(tc.want) || out.Skipped != 4-len(tc.want) {
				t.Errorf("output %+v", out)
			}
		})
	}
}
