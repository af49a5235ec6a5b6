package health

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/windlass-cd/windlass/internal/appspec"
)

func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	o := &unstructured.Unstructured{}
	if err := o.UnmarshalJSON(js); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestAssess(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want appspec.HealthStatus
	}{
		{"deployment available", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: a, generation: 2}, spec: {replicas: 2}, status: {observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2}}`, appspec.HealthHealthy},
		{"deployment not observed", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: a, generation: 3}, spec: {replicas: 2}, status: {observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2}}`, appspec.HealthProgressing},
		{"deployment rolling", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: a, generation: 2}, spec: {replicas: 2}, status: {observedGeneration: 2, replicas: 3, updatedReplicas: 2, availableReplicas: 2}}`, appspec.HealthProgressing},
		{"deployment paused", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: a}, spec: {paused: true}}`, appspec.HealthSuspended},
		{"deployment deadline", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: a}, status: {conditions: [{type: Progressing, status: "False", reason: ProgressDeadlineExceeded}]}}`, appspec.HealthDegraded},
		{"job complete", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {conditions: [{type: Complete, status: "True"}]}}`, appspec.HealthHealthy},
		{"job failed", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {conditions: [{type: Failed, status: "True"}]}}`, appspec.HealthDegraded},
		{"job running", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}}`, appspec.HealthProgressing},
		{"pod crashloop", `{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: Running, containerStatuses: [{state: {waiting: {reason: CrashLoopBackOff}}}]}}`, appspec.HealthDegraded},
		{"pod ready", `{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: Running, conditions: [{type: Ready, status: "True"}]}}`, appspec.HealthHealthy},
		{"configmap", `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}`, appspec.HealthHealthy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Assess(obj(t, tt.in)); got.Status != tt.want {
				t.Fatalf("Assess() = %+v, want %s", got, tt.want)
			}
		})
	}
	if got := Assess(nil); got.Status != appspec.HealthMissing {
		t.Fatalf("Assess(nil) = %v", got)
	}
}
