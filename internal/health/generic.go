package health

import (
	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// generic assesses an object that follows the Kubernetes status conventions
// (conditions such as Ready, Reconciling and Stalled, or an observed
// generation) with kstatus. ok is false when the object has neither, or
// kstatus cannot tell.
func generic(obj *unstructured.Unstructured) (r Result, ok bool) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	_, observed, _ := unstructured.NestedFieldNoCopy(obj.Object, "status", "observedGeneration")
	if len(conds) == 0 && !observed {
		return Result{}, false
	}
	res, err := status.Compute(obj)
	if err != nil {
		return Result{}, false
	}
	var s appspec.HealthStatus
	switch res.Status {
	case status.CurrentStatus:
		s = appspec.HealthHealthy
	case status.InProgressStatus, status.TerminatingStatus:
		s = appspec.HealthProgressing
	case status.FailedStatus:
		s = appspec.HealthDegraded
	case status.NotFoundStatus:
		s = appspec.HealthMissing
	default:
		return Result{}, false
	}
	return Result{Status: s, Message: res.Message}, true
}
