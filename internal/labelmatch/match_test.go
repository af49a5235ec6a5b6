package labelmatch

import (
	"errors"
	"testing"
)

func TestMatches(t *testing.T) {
	dev := map[string]string{"env": "dev", "tier": "web"}
	prod := map[string]string{"env": "prod"}
	tests := []struct {
		name   string
		exprs  []Expression
		labels map[string]string
		want   bool
	}{
		{name: "no expressions match all", labels: dev, want: true},
		{name: "no expressions match no labels", want: true},
		{name: "in", exprs: []Expression{{Key: "env", Operator: OpIn, Values: []string{"dev", "qa"}}}, labels: dev, want: true},
		{name: "in, other value", exprs: []Expression{{Key: "env", Operator: OpIn, Values: []string{"qa"}}}, labels: dev},
		{name: "in, key missing", exprs: []Expression{{Key: "region", Operator: OpIn, Values: []string{"eu"}}}, labels: dev},
		{name: "notin", exprs: []Expression{{Key: "env", Operator: OpNotIn, Values: []string{"dev"}}}, labels: prod, want: true},
		{name: "notin, value listed", exprs: []Expression{{Key: "env", Operator: OpNotIn, Values: []string{"dev"}}}, labels: dev},
		{name: "notin, key missing", exprs: []Expression{{Key: "region", Operator: OpNotIn, Values: []string{"eu"}}}, labels: dev, want: true},
		{name: "exists", exprs: []Expression{{Key: "tier", Operator: OpExists}}, labels: dev, want: true},
		{name: "exists, missing", exprs: []Expression{{Key: "tier", Operator: OpExists}}, labels: prod},
		{name: "exists, empty value", exprs: []Expression{{Key: "tier", Operator: OpExists}}, labels: map[string]string{"tier": ""}, want: true},
		{name: "doesnotexist", exprs: []Expression{{Key: "tier", Operator: OpDoesNotExist}}, labels: prod, want: true},
		{name: "doesnotexist, present", exprs: []Expression{{Key: "tier", Operator: OpDoesNotExist}}, labels: dev},
		{name: "all must hold", exprs: []Expression{
			{Key: "env", Operator: OpIn, Values: []string{"dev"}}, {Key: "tier", Operator: OpDoesNotExist}}, labels: dev},
		{name: "all hold", exprs: []Expression{
			{Key: "env", Operator: OpIn, Values: []string{"dev"}}, {Key: "tier", Operator: OpExists}}, labels: dev, want: true},
		{name: "operator is case sensitive", exprs: []Expression{{Key: "env", Operator: "in", Values: []string{"dev"}}}, labels: dev},
		{name: "invalid never matches", exprs: []Expression{{Key: "env", Operator: OpIn}}, labels: dev},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Matches(tt.exprs, tt.labels); got != tt.want {
				t.Errorf("Matches = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		exprs []Expression
		want  string // "" when valid
	}{
		{name: "none"},
		{name: "valid", exprs: []Expression{{Key: "env", Operator: OpIn, Values: []string{"dev"}}, {Key: "x", Operator: OpExists}}},
		{name: "no key", exprs: []Expression{{Operator: OpExists}},
			want: "matchExpressions[0]: invalid match expression: key is required"},
		{name: "unknown operator", exprs: []Expression{{Key: "env", Operator: OpExists}, {Key: "env", Operator: "Gt", Values: []string{"1"}}},
			want: `matchExpressions[1]: invalid match expression: env: operator "Gt": want In, NotIn, Exists or DoesNotExist`},
		{name: "in without values", exprs: []Expression{{Key: "env", Operator: OpIn}},
			want: "matchExpressions[0]: invalid match expression: env In needs at least one value"},
		{name: "notin without values", exprs: []Expression{{Key: "env", Operator: OpNotIn}},
			want: "matchExpressions[0]: invalid match expression: env NotIn needs at least one value"},
		{name: "exists with values", exprs: []Expression{{Key: "env", Operator: OpExists, Values: []string{"dev"}}},
			want: "matchExpressions[0]: invalid match expression: env Exists takes no values"},
		{name: "doesnotexist with values", exprs: []Expression{{Key: "env", Operator: OpDoesNotExist, Values: []string{"dev"}}},
			want: "matchExpressions[0]: invalid match expression: env DoesNotExist takes no values"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.exprs)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Fatalf("Validate = %v, want %q", err, tt.want)
			case tt.want != "" && !errors.Is(err, ErrInvalid):
				t.Errorf("Validate error does not wrap ErrInvalid")
			}
		})
	}
}
