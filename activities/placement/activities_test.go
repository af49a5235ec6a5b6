package placement

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/kube"
)

type fakeResolver map[string]string

func (f fakeResolver) ClusterTaskQueue(_ context.Context, server string) (string, error) {
	if server == "https://broken.example" {
		return "", errors.New("secret store unreachable")
	}
	return f[server], nil
}

// ClusterServer knows the names "name:" + server of f.
func (f fakeResolver) ClusterServer(_ context.Context, name string) (string, error) {
	for server := range f {
		if "name:"+server == name {
			return server, nil
		}
	}
	return None{}.ClusterServer(context.Background(), name)
}

func TestTaskQueueByName(t *testing.T) {
	a, err := New(fakeResolver{"https://noisy.example": "windlass-noisy"})
	if err != nil {
		t.Fatal(err)
	}
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	a.Register(env)
	v, err := env.ExecuteActivity(TaskQueueName, Input{Name: "name:https://noisy.example"})
	if err != nil {
		t.Fatal(err)
	}
	var out Output
	if err := v.Get(&out); err != nil || out != (Output{TaskQueue: "windlass-noisy", Server: "https://noisy.example"}) {
		t.Fatalf("out = %+v, %v", out, err)
	}
	_, err = env.ExecuteActivity(TaskQueueName, Input{Name: "nowhere"})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || !app.NonRetryable() || app.Type() != failure.TypeOf(kube.ErrUnknownCluster) ||
		!strings.Contains(err.Error(), "destination.name nowhere: destination cluster is not registered") {
		t.Fatalf("unknown name: err = %v, want a non-retryable UnknownCluster error naming it", err)
	}
}

func TestTaskQueue(t *testing.T) {
	tests := []struct {
		name     string
		resolver Resolver
		server   string
		want     string
		wantErr  string
	}{
		{"mapped", fakeResolver{"https://noisy.example": "windlass-noisy"}, "https://noisy.example", "windlass-noisy", ""},
		{"default", fakeResolver{}, "https://quiet.example", "", ""},
		{"none", None{}, "https://noisy.example", "", ""},
		{"resolver error", fakeResolver{}, "https://broken.example", "", "task queue of cluster https://broken.example: secret store unreachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(tt.resolver)
			if err != nil {
				t.Fatal(err)
			}
			var ts testsuite.WorkflowTestSuite
			env := ts.NewTestActivityEnvironment()
			a.Register(env)
			v, err := env.ExecuteActivity(TaskQueueName, Input{Server: tt.server})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var out Output
			if err := v.Get(&out); err != nil || out.TaskQueue != tt.want {
				t.Fatalf("out = %+v, %v; want %q", out, err, tt.want)
			}
		})
	}
	if _, err := New(nil); err == nil {
		t.Fatal("New(nil) accepted")
	}
}
