package health

import (
	"fmt"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// Script is a Lua script other than a health check (a resource action, say)
// that runs in the health checks' sandbox under a Checker's limits.
type Script struct {
	c *Checker
	s *script
}

// Compile compiles src; name names it in errors. A script that does not
// compile fails each run with the reason.
func (c *Checker) Compile(name, src string) *Script {
	return &Script{c: c, s: compile(name, "", src)}
}

// ReadScript reads a script file of at most 1 MiB.
func ReadScript(path string) (string, error) { return readScript(path) }

// Run runs the script with globals (JSON-like values, as decoded from
// JSON) and returns its return value as JSON-like values: a table whose
// keys are 1..n is a list, any other table an object, so an empty table
// is an empty object; whole numbers are int64. The error names the
// script and why it failed or broke a limit.
func (sc *Script) Run(globals map[string]any) (any, error) {
	v, err := sc.c.exec(sc.s, globals, readValue)
	if err != nil {
		return nil, fmt.Errorf("lua script %s %w", sc.s.name, err)
	}
	return v, nil
}

// maxValueDepth bounds the nesting of a returned value, which also stops
// a table that contains itself.
const maxValueDepth = 64

func readValue(v lua.LValue) outcome {
	out, err := fromLua(v, 0)
	if err != "" {
		return outcome{invalid: err}
	}
	return outcome{value: out}
}

func fromLua(v lua.LValue, depth int) (any, string) {
	if depth > maxValueDepth {
		return nil, fmt.Sprintf("returned a value nested deeper than %d levels", maxValueDepth)
	}
	switch x := v.(type) {
	case *lua.LNilType:
		return nil, ""
	case lua.LBool:
		return bool(x), ""
	case lua.LString:
		return string(x), ""
	case lua.LNumber:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, "returned a number that is not finite"
		}
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return int64(f), ""
		}
		return f, ""
	case *lua.LTable:
		if n := x.Len(); n > 0 && countKeys(x) == n {
			list := make([]any, n)
			for i := range n {
				e, err := fromLua(x.RawGetInt(i+1), depth+1)
				if err != "" {
					return nil, err
				}
				list[i] = e
			}
			return list, ""
		}
		obj := map[string]any{}
		var bad string
		x.ForEach(func(k, e lua.LValue) {
			if bad != "" {
				return
			}
			ks, ok := k.(lua.LString)
			if !ok {
				bad = fmt.Sprintf("returned a table with a key of type %s among string keys", k.Type())
				return
			}
			ev, err := fromLua(e, depth+1)
			if err != "" {
				bad = err
				return
			}
			obj[string(ks)] = ev
		})
		if bad != "" {
			return nil, bad
		}
		return obj, ""
	}
	return nil, fmt.Sprintf("returned a value of type %s, which has no JSON form", v.Type())
}

func countKeys(t *lua.LTable) int {
	n := 0
	t.ForEach(func(lua.LValue, lua.LValue) { n++ })
	return n
}
