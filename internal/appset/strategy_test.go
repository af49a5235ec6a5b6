package appset

import (
	"strings"
	"testing"
)

// Each strategy a set may carry, and each bad one with its field.
func TestValidateStrategy(t *testing.T) {
	const head = `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: s}
spec:
  generators: [{list: {elements: [{name: a}]}}]
  template: {metadata: {name: '{{name}}'}, spec: {}}
`
	for _, tc := range []struct {
		name, strategy, want string
	}{
		{name: "none"},
		{name: "all at once", strategy: `{type: AllAtOnce}`},
		{name: "rolling sync", strategy: `{type: RollingSync, deletionOrder: Reverse, rollingSync: {steps: [
			{matchExpressions: [{key: env, operator: In, values: [dev]}]},
			{matchExpressions: [{key: env, operator: In, values: [prod]}], maxUpdate: 25%}]}}`},
		{name: "maxUpdate number", strategy: `{type: RollingSync, rollingSync: {steps: [{maxUpdate: 2}]}}`},
		{name: "unknown type", strategy: `{type: BlueGreen}`, want: `spec.strategy.type: "BlueGreen": want AllAtOnce or RollingSync`},
		{name: "no steps", strategy: `{type: RollingSync, rollingSync: {steps: []}}`, want: "spec.strategy.rollingSync.steps: at least one step is required"},
		{name: "no rollingSync", strategy: `{type: RollingSync}`, want: "spec.strategy.rollingSync.steps: at least one step is required"},
		{name: "steps without type", strategy: `{rollingSync: {steps: [{}]}}`, want: "spec.strategy.rollingSync: needs type: RollingSync"},
		{name: "bad operator", strategy: `{type: RollingSync, rollingSync: {steps: [{matchExpressions: [{key: env, operator: Near, values: [a]}]}]}}`,
			want: "spec.strategy.rollingSync.steps[0]: matchExpressions[0]"},
		{name: "maxUpdate 0", strategy: `{type: RollingSync, rollingSync: {steps: [{}, {maxUpdate: 0}]}}`,
			want: "spec.strategy.rollingSync.steps[1]: maxUpdate 0 would never sync the step's apps"},
		{name: "maxUpdate over 100%", strategy: `{type: RollingSync, rollingSync: {steps: [{maxUpdate: 150%}]}}`,
			want: "spec.strategy.rollingSync.steps[0]: maxUpdate 150% is above 100%"},
		{name: "maxUpdate word", strategy: `{type: RollingSync, rollingSync: {steps: [{maxUpdate: many}]}}`,
			want: `maxUpdate: want a number or a percentage, got "many"`},
		{name: "bad deletion order", strategy: `{type: RollingSync, deletionOrder: Backwards, rollingSync: {steps: [{}]}}`,
			want: `spec.strategy.deletionOrder: "Backwards": want AllAtOnce or Reverse`},
		{name: "reverse without steps", strategy: `{deletionOrder: Reverse}`,
			want: "spec.strategy.deletionOrder: Reverse needs type: RollingSync"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := head
			if tc.strategy != "" {
				doc += "  strategy: " + tc.strategy + "\n"
			}
			s, err := Parse([]byte(doc))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one with %q", err, tc.want)
			case tc.want == "" && tc.strategy != "" && s.Spec.Strategy == nil:
				t.Fatal("strategy lost")
			}
		})
	}
}
