package actions

import (
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Names of the built-in actions.
const (
	Restart   = "restart"
	Pause     = "pause"
	Resume    = "resume"
	Scale     = "scale"
	CreateJob = "create-job"
	Suspend   = "suspend"
)

const (
	// restartedAtKey is the pod template annotation kubectl rollout
	// restart sets.
	restartedAtKey = "kubectl.kubernetes.io/restartedAt"
	// instantiateKey marks a Job created by hand from a CronJob, as
	// kubectl create job --from does.
	instantiateKey = "cronjob.kubernetes.io/instantiate"
	paramReplicas  = "replicas"
	maxNameLength  = 63
)

// builtinActions are the built-in actions of obj's kind.
func builtinActions(obj *unstructured.Unstructured) []Action {
	b := func(name string, disabled bool, params ...Param) Action {
		return Action{Name: name, Disabled: disabled, Params: params, Source: SourceBuiltin}
	}
	replicas := func() Param {
		p := Param{Name: paramReplicas, Type: "number"}
		if n, ok, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas"); ok {
			p.Default = strconv.FormatInt(n, 10)
		}
		return p
	}
	switch kindKey(obj) {
	case "apps/Deployment":
		paused, _, _ := unstructured.NestedBool(obj.Object, "spec", "paused")
		return []Action{b(Restart, false), b(Pause, paused), b(Resume, !paused), b(Scale, false, replicas())}
	case "apps/StatefulSet":
		return []Action{b(Restart, false), b(Scale, false, replicas())}
	case "apps/DaemonSet":
		return []Action{b(Restart, false)}
	case "batch/CronJob":
		suspended, _, _ := unstructured.NestedBool(obj.Object, "spec", "suspend")
		return []Action{b(CreateJob, false), b(Suspend, suspended), b(Resume, !suspended)}
	}
	return nil
}

// runBuiltin runs a built-in action that List offered for obj.
func runBuiltin(obj *unstructured.Unstructured, name string, params map[string]string, now time.Time) ([]Operation, error) {
	o := obj.DeepCopy()
	set := func(v any, path ...string) ([]Operation, error) {
		if err := unstructured.SetNestedField(o.Object, v, path...); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, name, err)
		}
		return []Operation{{Type: OpPatch, Object: o}}, nil
	}
	cron := kindKey(obj) == "batch/CronJob"
	switch {
	case name == Restart:
		return set(now.UTC().Format(time.RFC3339), "spec", "template", "metadata", "annotations", restartedAtKey)
	case name == Pause:
		return set(true, "spec", "paused")
	case name == Resume && cron:
		return set(false, "spec", "suspend")
	case name == Resume:
		return set(false, "spec", "paused")
	case name == Suspend:
		return set(true, "spec", "suspend")
	case name == Scale:
		n, err := strconv.ParseInt(params[paramReplicas], 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w: scale: parameter replicas is %q, want a whole number of at least 0", ErrInvalid, params[paramReplicas])
		}
		return set(n, "spec", "replicas")
	case name == CreateJob:
		job, err := jobFrom(obj, now)
		if err != nil {
			return nil, fmt.Errorf("%w: create-job: %w", ErrInvalid, err)
		}
		return []Operation{{Type: OpCreate, Object: job}}, nil
	}
	return nil, fmt.Errorf("%w: %s has no action %q", ErrUnknown, kindKey(obj), name)
}

// jobFrom makes a Job of a CronJob's job template, owned by the CronJob
// and named after it and the time.
func jobFrom(cron *unstructured.Unstructured, now time.Time) (*unstructured.Unstructured, error) {
	tmpl, ok, err := unstructured.NestedMap(cron.Object, "spec", "jobTemplate")
	if err != nil || !ok {
		return nil, fmt.Errorf("CronJob %s has no spec.jobTemplate", cron.GetName())
	}
	spec, _, _ := unstructured.NestedMap(tmpl, "spec")
	job := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	job.SetAPIVersion("batch/v1")
	job.SetKind("Job")
	suffix := fmt.Sprintf("-manual-%d", now.Unix())
	base := cron.GetName()
	if len(base)+len(suffix) > maxNameLength {
		base = base[:maxNameLength-len(suffix)]
	}
	job.SetName(base + suffix)
	job.SetNamespace(cron.GetNamespace())
	labels, _, _ := unstructured.NestedStringMap(tmpl, "metadata", "labels")
	annotations, _, _ := unstructured.NestedStringMap(tmpl, "metadata", "annotations")
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[instantiateKey] = "manual"
	if len(labels) > 0 {
		job.SetLabels(labels)
	}
	job.SetAnnotations(annotations)
	owner := true
	job.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: cron.GetAPIVersion(), Kind: cron.GetKind(), Name: cron.GetName(), UID: cron.GetUID(), Controller: &owner,
	}})
	return job, nil
}
