package workflows

import (
	"fmt"
	"slices"

	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/cluster"
)

// checkOrphans looks for orphaned resources in the app's namespaces when
// its project sets orphanedResources, on every pass but one only drift
// asked for (the last answer stays). Without the setting it issues no
// command, as 0.1.0, whose projects could not set it, did not.
func (a *application) checkOrphans(cctx workflow.Context, drift bool) {
	st := &a.st.Status
	if a.project == nil || a.project.OrphanedResources == nil {
		st.OrphanedResources = nil
		return
	}
	if drift && st.OrphanedResources != nil {
		return
	}
	spec := a.destSpec()
	var nss []string
	if ns := spec.Destination.Namespace; ns != "" {
		nss = append(nss, ns)
	}
	for _, r := range st.Resources {
		if r.Namespace != "" && !slices.Contains(nss, r.Namespace) {
			nss = append(nss, r.Namespace)
		}
	}
	if len(nss) == 0 {
		st.OrphanedResources = nil
		return
	}
	settings := *a.project.OrphanedResources
	out, err := findOrphans(cctx, cluster.OrphansInput{Target: clusterTarget(spec), Namespaces: nss, Settings: settings})
	if err != nil {
		workflow.GetLogger(cctx).Warn(msgOrphansFailed, "error", errorMessage(err))
		return
	}
	if settings.Warn && out.Count > 0 {
		out.Warning = fmt.Sprintf("%d orphaned resources in the app's namespaces", out.Count)
	}
	st.OrphanedResources = &out
}

const msgOrphansFailed = "cannot look for orphaned resources; keeping the last answer"
