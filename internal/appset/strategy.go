package appset

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/windlass-cd/windlass/internal/labelmatch"
)

// Strategy types and deletion orders of a set (Argo CD's words).
const (
	StrategyAllAtOnce      = "AllAtOnce"
	StrategyRollingSync    = "RollingSync"
	DeletionOrderAllAtOnce = "AllAtOnce"
	DeletionOrderReverse   = "Reverse"
)

// Strategy is how the set's apps roll to a change: all at once (their
// own automated sync) or by RollingSync steps.
type Strategy struct {
	Type        string               `json:"type,omitempty"`
	RollingSync *RollingSyncStrategy `json:"rollingSync,omitempty"`
	// DeletionOrder is how the set's apps go when the set is deleted:
	// AllAtOnce (the default) or Reverse, the last step's first.
	DeletionOrder string `json:"deletionOrder,omitempty"`
}

// RollingSyncStrategy lists the steps.
type RollingSyncStrategy struct {
	Steps []RollingSyncStep `json:"steps"`
}

// RollingSyncStep selects apps by their labels.
type RollingSyncStep struct {
	MatchExpressions []labelmatch.Expression `json:"matchExpressions,omitempty"`
	// MaxUpdate bounds the step's apps syncing at once (nil: all).
	MaxUpdate *MaxUpdate `json:"maxUpdate,omitempty"`
}

// IsRollingSync says whether the set rolls its apps out step by step.
func (s *Strategy) IsRollingSync() bool { return s != nil && s.Type == StrategyRollingSync }

// validate checks the strategy; field is "spec.strategy".
func (s *Strategy) validate(field string) error {
	if s == nil {
		return nil
	}
	switch s.DeletionOrder {
	case "", DeletionOrderAllAtOnce, DeletionOrderReverse:
	default:
		return invalid(field+".deletionOrder", "%q: want AllAtOnce or Reverse", s.DeletionOrder)
	}
	switch s.Type {
	case "", StrategyAllAtOnce:
		if s.RollingSync != nil {
			return invalid(field+".rollingSync", "needs type: RollingSync")
		}
		if s.DeletionOrder == DeletionOrderReverse {
			return invalid(field+".deletionOrder", "Reverse needs type: RollingSync, whose steps it reverses")
		}
		return nil
	case StrategyRollingSync:
	default:
		return invalid(field+".type", "%q: want AllAtOnce or RollingSync", s.Type)
	}
	if s.RollingSync == nil || len(s.RollingSync.Steps) == 0 {
		return invalid(field+".rollingSync.steps", "at least one step is required")
	}
	for i, st := range s.RollingSync.Steps {
		f := fmt.Sprintf("%s.rollingSync.steps[%d]", field, i)
		if err := labelmatch.Validate(st.MatchExpressions); err != nil {
			return invalid(f, "%v", err)
		}
		if st.MaxUpdate != nil {
			if err := st.MaxUpdate.Validate(); err != nil {
				return invalid(f, "%v", err)
			}
		}
	}
	return nil
}

// MaxUpdate is a number of apps or a percentage of a step's apps: JSON 2
// or "2" or "25%".
type MaxUpdate struct {
	Value   int
	Percent bool
}

// UnmarshalJSON reads a number or a string.
func (m *MaxUpdate) UnmarshalJSON(b []byte) error {
	var n int
	if err := json.Unmarshal(b, &n); err == nil {
		*m = MaxUpdate{Value: n}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("maxUpdate: want a number or a percentage, got %s", b)
	}
	digits, pct := strings.CutSuffix(s, "%")
	n, err := strconv.Atoi(digits)
	if err != nil {
		return fmt.Errorf("maxUpdate: want a number or a percentage, got %q", s)
	}
	*m = MaxUpdate{Value: n, Percent: pct}
	return nil
}

// MarshalJSON writes a number, or a string for a percentage.
func (m MaxUpdate) MarshalJSON() ([]byte, error) {
	if m.Percent {
		return json.Marshal(strconv.Itoa(m.Value) + "%")
	}
	return json.Marshal(m.Value)
}

func (m MaxUpdate) String() string {
	if m.Percent {
		return strconv.Itoa(m.Value) + "%"
	}
	return strconv.Itoa(m.Value)
}

// Validate refuses what would never sync a step or is no bound.
func (m MaxUpdate) Validate() error {
	switch {
	case m.Value < 0:
		return fmt.Errorf("maxUpdate %s is negative", m)
	case m.Value == 0:
		return fmt.Errorf("maxUpdate %s would never sync the step's apps", m)
	case m.Percent && m.Value > 100:
		return fmt.Errorf("maxUpdate %s is above 100%%", m)
	}
	return nil
}

// Of is how many of n apps may sync at once: a percentage rounds down,
// but never below one app.
func (m *MaxUpdate) Of(n int) int {
	switch {
	case m == nil || n == 0:
		return n
	case m.Percent:
		return max(1, n*m.Value/100)
	}
	return min(m.Value, n)
}
