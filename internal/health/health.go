package health

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// Result is a health status with a human-readable message.
type Result struct {
	Status  appspec.HealthStatus
	Message string
}

// Assess returns the health of a live object; nil means Missing.
func Assess(obj *unstructured.Unstructured) Result {
	if obj == nil {
		return Result{Status: appspec.HealthMissing}
	}
	if obj.GetDeletionTimestamp() != nil {
		return Result{Status: appspec.HealthProgressing, Message: "pending deletion"}
	}
	switch obj.GroupVersionKind().GroupKind().String() {
	case "Deployment.apps":
		return deployment(obj)
	case "StatefulSet.apps", "ReplicaSet.apps":
		return replicated(obj, "readyReplicas")
	case "DaemonSet.apps":
		return daemonSet(obj)
	case "Job.batch":
		return job(obj)
	case "Pod":
		return pod(obj)
	}
	return Result{Status: appspec.HealthHealthy}
}

func num(obj *unstructured.Unstructured, path ...string) int64 {
	v, _, _ := unstructured.NestedInt64(obj.Object, path...)
	return v
}

func generationObserved(obj *unstructured.Unstructured) bool {
	return num(obj, "status", "observedGeneration") >= obj.GetGeneration()
}

func condition(obj *unstructured.Unstructured, typ string) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != typ {
			continue
		}
		s, _ := m["status"].(string)
		r, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		return s, r, msg
	}
	return "", "", ""
}

func deployment(obj *unstructured.Unstructured) Result {
	if paused, _, _ := unstructured.NestedBool(obj.Object, "spec", "paused"); paused {
		return Result{Status: appspec.HealthSuspended, Message: "deployment is paused"}
	}
	if !generationObserved(obj) {
		return Result{Status: appspec.HealthProgressing, Message: "waiting for the rollout to be observed"}
	}
	if _, reason, msg := condition(obj, "Progressing"); reason == "ProgressDeadlineExceeded" {
		return Result{Status: appspec.HealthDegraded, Message: msg}
	}
	want := int64(1)
	if v, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas"); found {
		want = v
	}
	updated, total := num(obj, "status", "updatedReplicas"), num(obj, "status", "replicas")
	available := num(obj, "status", "availableReplicas")
	switch {
	case updated < want:
		return Result{Status: appspec.HealthProgressing, Message: fmt.Sprintf("%d of %d updated replicas are available", updated, want)}
	case total > updated:
		return Result{Status: appspec.HealthProgressing, Message: fmt.Sprintf("%d old replicas are pending termination", total-updated)}
	case available < updated:
		return Result{Status: appspec.HealthProgressing, Message: fmt.Sprintf("%d of %d updated replicas are available", available, updated)}
	}
	return Result{Status: appspec.HealthHealthy}
}

func replicated(obj *unstructured.Unstructured, readyField string) Result {
	if !generationObserved(obj) {
		return Result{Status: appspec.HealthProgressing, Message: "waiting for the rollout to be observed"}
	}
	want := int64(1)
	if v, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas"); found {
		want = v
	}
	if ready := num(obj, "status", readyField); ready < want {
		return Result{Status: appspec.HealthProgressing, Message: fmt.Sprintf("%d of %d replicas are ready", ready, want)}
	}
	return Result{Status: appspec.HealthHealthy}
}

func daemonSet(obj *unstructured.Unstructured) Result {
	if !generationObserved(obj) {
		return Result{Status: appspec.HealthProgressing, Message: "waiting for the rollout to be observed"}
	}
	want, ready := num(obj, "status", "desiredNumberScheduled"), num(obj, "status", "numberAvailable")
	if ready < want {
		return Result{Status: appspec.HealthProgressing, Message: fmt.Sprintf("%d of %d pods are available", ready, want)}
	}
	return Result{Status: appspec.HealthHealthy}
}

func job(obj *unstructured.Unstructured) Result {
	if s, _, msg := condition(obj, "Failed"); s == "True" {
		return Result{Status: appspec.HealthDegraded, Message: msg}
	}
	if s, _, _ := condition(obj, "Complete"); s == "True" {
		return Result{Status: appspec.HealthHealthy, Message: "job completed"}
	}
	if suspended, _, _ := unstructured.NestedBool(obj.Object, "spec", "suspend"); suspended {
		return Result{Status: appspec.HealthSuspended, Message: "job is suspended"}
	}
	return Result{Status: appspec.HealthProgressing, Message: "job is running"}
}

func pod(obj *unstructured.Unstructured) Result {
	phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
	statuses, _, _ := unstructured.NestedSlice(obj.Object, "status", "containerStatuses")
	for _, cs := range statuses {
		reason, _, _ := unstructured.NestedString(cs.(map[string]any), "state", "waiting", "reason")
		switch reason {
		case "CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError":
			return Result{Status: appspec.HealthDegraded, Message: reason}
		}
	}
	switch phase {
	case "Succeeded":
		return Result{Status: appspec.HealthHealthy, Message: "pod completed"}
	case "Failed":
		return Result{Status: appspec.HealthDegraded, Message: "pod failed"}
	case "Running":
		if s, _, _ := condition(obj, "Ready"); s == "True" {
			return Result{Status: appspec.HealthHealthy}
		}
	}
	return Result{Status: appspec.HealthProgressing, Message: "pod is " + phase}
}
