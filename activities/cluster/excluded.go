package cluster

import (
	"fmt"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// MaxConditions bounds the excluded-resource warnings of one compare; the
// last one counts the rest.
const MaxConditions = 20

// msgExcluded explains a rendered object that is not applied.
const msgExcluded = "excluded by resource.exclusions or resource.inclusions"

// excludedConditions warns of each rendered object whose kind is excluded,
// as Argo CD's ExcludedResourceWarning does.
func excludedConditions(keys []appspec.ResourceKey) []appspec.Condition {
	var out []appspec.Condition
	for i, k := range keys {
		if i == MaxConditions-1 && len(keys) > MaxConditions {
			out = append(out, appspec.Condition{Type: appspec.ConditionExcludedResourceWarning,
				Message: fmt.Sprintf("%d more rendered resources are not applied: their kinds are excluded", len(keys)-i)})
			break
		}
		out = append(out, appspec.Condition{Type: appspec.ConditionExcludedResourceWarning,
			Message: excludedMessage(k)})
	}
	return out
}

func excludedMessage(k appspec.ResourceKey) string {
	what := describe(k)
	if k.Group != "" {
		what = k.Group + "/" + what
	}
	return what + " is not applied: its kind is " + msgExcluded
}

// skippedExcluded are the sync log's entries for the excluded objects a
// sync of op would otherwise apply.
func skippedExcluded(keys []appspec.ResourceKey, op SyncOperation) []ResourceResult {
	var out []ResourceResult
	for _, k := range keys {
		if selected(op, k) {
			out = append(out, ResourceResult{ResourceKey: k, Action: ActionSkipped, Message: msgExcluded, Phase: PhaseSync})
		}
	}
	return out
}
