package health

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// ignoreRestartPolicy makes a running Pod with restartPolicy OnFailure or
// Never be judged by readiness, as Argo CD's annotation of the same name does.
const ignoreRestartPolicy = "argocd.argoproj.io/ignore-restart-policy"

type checkFunc func(*unstructured.Unstructured) Result

// builtin returns the built-in check for the object's group and kind, or nil.
func builtin(obj *unstructured.Unstructured) checkFunc {
	gk := obj.GroupVersionKind().GroupKind()
	switch gk.Group + "/" + gk.Kind {
	case "apps/Deployment", "extensions/Deployment":
		return deployment
	case "apps/StatefulSet":
		return statefulSet
	case "apps/DaemonSet", "extensions/DaemonSet":
		return daemonSet
	case "apps/ReplicaSet", "extensions/ReplicaSet":
		return replicaSet
	case "/Pod":
		return pod
	case "/Service":
		return service
	case "/PersistentVolumeClaim":
		return pvc
	case "batch/Job":
		return job
	case "batch/CronJob":
		return cronJob
	case "networking.k8s.io/Ingress", "extensions/Ingress":
		return ingress
	case "autoscaling/HorizontalPodAutoscaler":
		return hpa
	case "apiregistration.k8s.io/APIService":
		return apiService
	}
	return nil
}

func healthy(msg string) Result     { return Result{Status: appspec.HealthHealthy, Message: msg} }
func progressing(msg string) Result { return Result{Status: appspec.HealthProgressing, Message: msg} }
func degraded(msg string) Result    { return Result{Status: appspec.HealthDegraded, Message: msg} }
func suspended(msg string) Result   { return Result{Status: appspec.HealthSuspended, Message: msg} }

func num(obj map[string]any, path ...string) int64 {
	v, _, _ := unstructured.NestedInt64(obj, path...)
	return v
}

func str(obj map[string]any, path ...string) string {
	v, _, _ := unstructured.NestedString(obj, path...)
	return v
}

func boolean(obj map[string]any, path ...string) bool {
	v, _, _ := unstructured.NestedBool(obj, path...)
	return v
}

// desiredReplicas is spec.replicas, 1 when unset (the API server's default).
func desiredReplicas(obj *unstructured.Unstructured) int64 {
	if v, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas"); found {
		return v
	}
	return 1
}

// stale says whether the controller has not yet seen the latest spec.
func stale(obj *unstructured.Unstructured) bool {
	return obj.GetGeneration() > num(obj.Object, "status", "observedGeneration")
}

type condition struct{ Type, Status, Reason, Message string }

func conditions(obj map[string]any) []condition {
	list, _, _ := unstructured.NestedSlice(obj, "status", "conditions")
	out := make([]condition, 0, len(list))
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		out = append(out, condition{Type: str(m, "type"), Status: str(m, "status"), Reason: str(m, "reason"), Message: str(m, "message")})
	}
	return out
}

func findCondition(obj map[string]any, typ string) (condition, bool) {
	for _, c := range conditions(obj) {
		if c.Type == typ {
			return c, true
		}
	}
	return condition{}, false
}

// firstNonEmpty returns the first of its arguments that is not empty.
func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func deployment(obj *unstructured.Unstructured) Result {
	o := obj.Object
	if boolean(o, "spec", "paused") {
		return suspended("deployment is paused")
	}
	if stale(obj) {
		return progressing("waiting for the deployment controller to observe the latest spec")
	}
	if c, ok := findCondition(o, "Progressing"); ok && c.Reason == "ProgressDeadlineExceeded" {
		return degraded(fmt.Sprintf("deployment %q exceeded its progress deadline", obj.GetName()))
	}
	want := desiredReplicas(obj)
	updated, total, available := num(o, "status", "updatedReplicas"), num(o, "status", "replicas"), num(o, "status", "availableReplicas")
	switch {
	case updated < want:
		return progressing(fmt.Sprintf("rollout in progress: %d of %d replicas updated", updated, want))
	case total > updated:
		return progressing(fmt.Sprintf("rollout in progress: %d old replicas pending termination", total-updated))
	case available < updated:
		return progressing(fmt.Sprintf("rollout in progress: %d of %d updated replicas available", available, updated))
	}
	return healthy("")
}

func statefulSet(obj *unstructured.Unstructured) Result {
	o := obj.Object
	if num(o, "status", "observedGeneration") == 0 || stale(obj) {
		return progressing("waiting for the statefulset controller to observe the latest spec")
	}
	want, ready, updated := desiredReplicas(obj), num(o, "status", "readyReplicas"), num(o, "status", "updatedReplicas")
	if ready < want {
		return progressing(fmt.Sprintf("waiting for %d of %d pods to be ready", want-ready, want))
	}
	strategy := str(o, "spec", "updateStrategy", "type")
	if strategy == "OnDelete" {
		return healthy(fmt.Sprintf("%d pods ready; updates wait for pods to be deleted (OnDelete)", ready))
	}
	if rolling, ok, _ := unstructured.NestedMap(o, "spec", "updateStrategy", "rollingUpdate"); ok {
		if partition, found, _ := unstructured.NestedInt64(rolling, "partition"); found && updated < want-partition {
			return progressing(fmt.Sprintf("partitioned rollout in progress: %d of %d pods updated", updated, want-partition))
		}
		return healthy(fmt.Sprintf("rollout complete: %d pods updated", updated))
	}
	if cur, upd := str(o, "status", "currentRevision"), str(o, "status", "updateRevision"); cur != upd {
		return progressing(fmt.Sprintf("rollout in progress: %d pods at revision %s", updated, upd))
	}
	return healthy(fmt.Sprintf("rollout complete: %d pods at revision %s", num(o, "status", "currentReplicas"), str(o, "status", "currentRevision")))
}

func daemonSet(obj *unstructured.Unstructured) Result {
	o := obj.Object
	if stale(obj) {
		return progressing("waiting for the daemonset controller to observe the latest spec")
	}
	desired, updated, available := num(o, "status", "desiredNumberScheduled"), num(o, "status", "updatedNumberScheduled"), num(o, "status", "numberAvailable")
	if str(o, "spec", "updateStrategy", "type") == "OnDelete" {
		return healthy(fmt.Sprintf("%d of %d pods updated; updates wait for pods to be deleted (OnDelete)", updated, desired))
	}
	if updated < desired {
		return progressing(fmt.Sprintf("rollout in progress: %d of %d pods updated", updated, desired))
	}
	if available < desired {
		return progressing(fmt.Sprintf("rollout in progress: %d of %d pods available", available, desired))
	}
	return healthy("")
}

func replicaSet(obj *unstructured.Unstructured) Result {
	o := obj.Object
	if stale(obj) {
		return progressing("waiting for the replicaset controller to observe the latest spec")
	}
	if c, ok := findCondition(o, "ReplicaFailure"); ok && c.Status == "True" {
		return degraded(firstNonEmpty(c.Message, c.Reason, "replica failure"))
	}
	if want, available := desiredReplicas(obj), num(o, "status", "availableReplicas"); available < want {
		return progressing(fmt.Sprintf("%d of %d replicas available", available, want))
	}
	return healthy("")
}

func pod(obj *unstructured.Unstructured) Result {
	o := obj.Object
	policy := firstNonEmpty(str(o, "spec", "restartPolicy"), "Always")
	message := str(o, "status", "message")
	statuses, _, _ := unstructured.NestedSlice(o, "status", "containerStatuses")
	// A restarting container is a failure only for long-running pods: a hook
	// pod (OnFailure, Never) that cannot pull its image yet may still succeed.
	if policy == "Always" {
		var problems []string
		for _, cs := range statuses {
			m, _ := cs.(map[string]any)
			reason := str(m, "state", "waiting", "reason")
			if strings.HasPrefix(reason, "Err") || strings.HasSuffix(reason, "Error") || strings.HasSuffix(reason, "BackOff") {
				problems = append(problems, firstNonEmpty(str(m, "state", "waiting", "message"), fmt.Sprintf("container %q: %s", str(m, "name"), reason)))
			}
		}
		if len(problems) > 0 {
			return degraded(strings.Join(problems, ", "))
		}
	}
	switch phase := str(o, "status", "phase"); phase {
	case "Pending":
		return progressing(firstNonEmpty(message, "pod is pending"))
	case "Succeeded":
		return healthy(message)
	case "Failed":
		return degraded(firstNonEmpty(message, podFailure(o), "pod failed"))
	case "Running":
		_, ignore := obj.GetAnnotations()[ignoreRestartPolicy]
		if policy != "Always" && !ignore {
			return progressing(firstNonEmpty(message, "pod is running"))
		}
		if c, _ := findCondition(o, "Ready"); c.Status == "True" {
			return healthy(message)
		}
		for _, cs := range statuses {
			m, _ := cs.(map[string]any)
			if _, terminated, _ := unstructured.NestedMap(m, "lastState", "terminated"); terminated {
				return degraded(firstNonEmpty(message, fmt.Sprintf("container %q restarted and is not ready", str(m, "name"))))
			}
		}
		return progressing(firstNonEmpty(message, "pod is not ready"))
	default:
		return Result{Status: appspec.HealthUnknown, Message: firstNonEmpty(message, fmt.Sprintf("pod phase is %q", phase))}
	}
}

// podFailure explains a failed pod from its first terminated container.
func podFailure(o map[string]any) string {
	for _, field := range []string{"initContainerStatuses", "containerStatuses"} {
		statuses, _, _ := unstructured.NestedSlice(o, "status", field)
		for _, cs := range statuses {
			m, _ := cs.(map[string]any)
			t, ok, _ := unstructured.NestedMap(m, "state", "terminated")
			if !ok {
				continue
			}
			if msg := str(t, "message"); msg != "" {
				return msg
			}
			if reason := str(t, "reason"); reason == "OOMKilled" {
				return reason
			}
			if code := num(t, "exitCode"); code != 0 {
				return fmt.Sprintf("container %q failed with exit code %d", str(m, "name"), code)
			}
		}
	}
	return ""
}

func job(obj *unstructured.Unstructured) Result {
	o := obj.Object
	if c, ok := findCondition(o, "Failed"); ok && c.Status == "True" {
		return degraded(firstNonEmpty(c.Message, c.Reason, "job failed"))
	}
	if c, ok := findCondition(o, "Complete"); ok && c.Status == "True" {
		return healthy(firstNonEmpty(c.Message, "job completed"))
	}
	if c, ok := findCondition(o, "Suspended"); (ok && c.Status == "True") || boolean(o, "spec", "suspend") {
		return suspended("job is suspended")
	}
	return progressing("job is running")
}

func cronJob(obj *unstructured.Unstructured) Result {
	o := obj.Object
	if boolean(o, "spec", "suspend") {
		return suspended("cronjob is suspended")
	}
	status, ok, _ := unstructured.NestedMap(o, "status")
	if !ok {
		return progressing("waiting for the cronjob controller")
	}
	if active, _, _ := unstructured.NestedSlice(status, "active"); len(active) > 0 {
		return progressing(fmt.Sprintf("waiting for %d jobs to complete", len(active)))
	}
	scheduled, succeeded := str(status, "lastScheduleTime"), str(status, "lastSuccessfulTime")
	if scheduled == "" {
		return healthy("cronjob has not run yet")
	}
	// RFC 3339 times in UTC compare correctly as text.
	if succeeded == "" || succeeded < scheduled {
		return degraded("the last job of the cronjob did not succeed")
	}
	return healthy("the last job of the cronjob succeeded")
}

func service(obj *unstructured.Unstructured) Result {
	if str(obj.Object, "spec", "type") != "LoadBalancer" {
		return healthy("")
	}
	if lbIngress(obj.Object) {
		return healthy("")
	}
	return progressing("waiting for the load balancer to get an address")
}

func ingress(obj *unstructured.Unstructured) Result {
	if lbIngress(obj.Object) {
		return healthy("")
	}
	return progressing("waiting for the load balancer to get an address")
}

// lbIngress says whether status.loadBalancer.ingress is not empty.
func lbIngress(o map[string]any) bool {
	list, _, _ := unstructured.NestedSlice(o, "status", "loadBalancer", "ingress")
	return len(list) > 0
}

func pvc(obj *unstructured.Unstructured) Result {
	switch phase := str(obj.Object, "status", "phase"); phase {
	case "Bound":
		return healthy("")
	case "Pending":
		return progressing("waiting for the claim to be bound")
	case "Lost":
		return degraded("the claim lost its volume")
	default:
		return Result{Status: appspec.HealthUnknown, Message: fmt.Sprintf("claim phase is %q", phase)}
	}
}

// hpa judges a HorizontalPodAutoscaler by its conditions: a failure to get
// the scale or the metrics is Degraded, being able to scale or being within
// limits is Healthy, anything else is still Progressing.
func hpa(obj *unstructured.Unstructured) Result {
	conds := conditions(obj.Object)
	for _, c := range conds {
		switch c.Type + "/" + c.Reason {
		case "AbleToScale/FailedGetScale", "AbleToScale/FailedUpdateScale",
			"ScalingActive/FailedGetResourceMetric", "ScalingActive/InvalidSelector":
			return degraded(firstNonEmpty(c.Message, c.Reason))
		}
	}
	for _, c := range conds {
		if (c.Type == "AbleToScale" || c.Type == "ScalingLimited") && c.Status == "True" {
			return healthy(c.Message)
		}
	}
	return progressing("waiting to autoscale")
}

func apiService(obj *unstructured.Unstructured) Result {
	c, ok := findCondition(obj.Object, "Available")
	if !ok {
		return progressing("waiting for the API service to be checked")
	}
	msg := c.Reason
	if c.Message != "" {
		msg = strings.TrimPrefix(msg+": "+c.Message, ": ")
	}
	if c.Status == "True" {
		return healthy(msg)
	}
	return progressing(firstNonEmpty(msg, "API service is not available"))
}
