package labelmatch

import (
	"errors"
	"fmt"
	"slices"
)

// Operators of an Expression.
const (
	OpIn           = "In"
	OpNotIn        = "NotIn"
	OpExists       = "Exists"
	OpDoesNotExist = "DoesNotExist"
)

// ErrInvalid marks an expression that cannot be matched.
var ErrInvalid = errors.New("invalid match expression")

// Expression is one requirement on an app's labels.
type Expression struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// Validate checks one expression: a key, a known operator, values for In
// and NotIn and none for Exists and DoesNotExist.
func (e Expression) Validate() error {
	switch {
	case e.Key == "":
		return fmt.Errorf("%w: key is required", ErrInvalid)
	case e.Operator == OpIn || e.Operator == OpNotIn:
		if len(e.Values) == 0 {
			return fmt.Errorf("%w: %s %s needs at least one value", ErrInvalid, e.Key, e.Operator)
		}
	case e.Operator == OpExists || e.Operator == OpDoesNotExist:
		if len(e.Values) > 0 {
			return fmt.Errorf("%w: %s %s takes no values", ErrInvalid, e.Key, e.Operator)
		}
	default:
		return fmt.Errorf("%w: %s: operator %q: want In, NotIn, Exists or DoesNotExist", ErrInvalid, e.Key, e.Operator)
	}
	return nil
}

// Validate checks every expression; the error names the first bad one's
// index.
func Validate(exprs []Expression) error {
	for i, e := range exprs {
		if err := e.Validate(); err != nil {
			return fmt.Errorf("matchExpressions[%d]: %w", i, err)
		}
	}
	return nil
}

// Matches says whether labels satisfy e. NotIn matches an app without
// the key, as in Kubernetes.
func (e Expression) Matches(labels map[string]string) bool {
	v, ok := labels[e.Key]
	switch e.Operator {
	case OpIn:
		return ok && slices.Contains(e.Values, v)
	case OpNotIn:
		return !ok || !slices.Contains(e.Values, v)
	case OpExists:
		return ok
	case OpDoesNotExist:
		return !ok
	}
	return false
}

// Matches says whether labels satisfy every expression (no expressions:
// true). Invalid expressions never match; Validate reports them.
func Matches(exprs []Expression, labels map[string]string) bool {
	for _, e := range exprs {
		if e.Validate() != nil || !e.Matches(labels) {
			return false
		}
	}
	return true
}
