package placement

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/testsuite"
)

type fakeResolver map[string]string

func (f fakeResolver) ClusterTaskQueue(_ context.Context, server string) (string, error) {
	if server == "https://broken.example" {
		return "", errors.New("secret store unreachable")
	}
	return f[server], nil
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
