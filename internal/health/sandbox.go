package health

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// The limits of one script run, and how they are enforced:
//
//   - timeout: the run's context has a deadline; gopher-lua checks its
//     context before every instruction.
//   - instructions: the context counts those checks and ends the run when
//     the budget is spent, so a loop stops after the same amount of work on
//     a fast or a loaded machine.
//   - stacks: lua.Options caps the call stack (callStackSize frames) and the
//     value stack (registryMaxSize slots); deep recursion and huge unpacks
//     fail with "stack overflow".
//   - memory: the ".." operator (rewritten into a call when the script is
//     compiled: meterConcat), the string library functions that can build
//     large strings (rep, format, gsub, upper, lower, reverse) and
//     table.concat charge what they produce to a per-run budget of
//     limits.memory bytes, checked before the allocation. Tables cannot be
//     metered from outside gopher-lua, so while a script runs the heap is
//     sampled every heapSampleInterval and the run ends if it grew by more
//     than limits.memory. The heap is the process's, so other goroutines'
//     allocations count too; hence a generous default.
//
// A run that breaks a limit ends at its next instruction. A Go function that
// does not return (a pathological pattern match) cannot be interrupted: after
// the timeout and a grace period, the caller gets Unknown and the run is left
// to finish on its own.
type limits struct {
	timeout      time.Duration
	instructions int64
	memory       int64
}

const (
	callStackSize      = 200
	registrySize       = 1024
	registryMaxSize    = 256 * 1024
	heapSampleInterval = 2 * time.Millisecond
	abandonGrace       = 250 * time.Millisecond
	// gsubWorkLimit bounds matches × length of one gsub, whose gopher-lua
	// implementation copies the whole string once per match.
	gsubWorkLimit = 64 << 20
)

// run executes a script against obj, whose "group/Kind" is key, and turns
// what it returns into a Result. Any failure is Unknown, with a message
// naming the script.
func (c *Checker) run(s *script, key string, obj *unstructured.Unstructured) Result {
	v, err := c.exec(s, map[string]any{"obj": obj.Object}, toResult)
	if err != nil {
		name := "lua health script for " + key
		if s.key != key {
			name += " (" + s.name + ")"
		}
		return Result{Status: appspec.HealthUnknown, Message: name + " " + err.Error(), ScriptError: true}
	}
	return v.(Result)
}

// exec runs s under the Checker's limits with globals set, and read turns
// what it returned into a value. The error says why the run failed
// without naming the script.
func (c *Checker) exec(s *script, globals map[string]any, read func(lua.LValue) outcome) (any, error) {
	if s.err != nil {
		return nil, s.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.limits.timeout)
	defer cancel()
	g := newGuard(ctx, c.limits.instructions)
	done := make(chan outcome, 1)
	go func() { done <- execute(s.proto, globals, read, g, c.limits.memory) }()

	// Growth counts from the lowest heap seen: a collection of other
	// goroutines' garbage during the run must not widen the budget.
	base := heapBytes()
	tick := time.NewTicker(heapSampleInterval)
	defer tick.Stop()
	deadline := ctx.Done()
	var abandon <-chan time.Time
	for {
		select {
		case o := <-done:
			if err := g.Err(); err != nil && !errors.Is(err, errFinished) {
				return nil, err
			}
			if o.err != nil {
				// Lua errors start with the chunk name, which is s.name.
				msg := o.err.Error()
				if rest, ok := strings.CutPrefix(msg, s.name+":"); ok {
					msg = "line " + rest
				}
				return nil, fmt.Errorf("failed: %s", msg)
			}
			if o.invalid != "" {
				return nil, errors.New(o.invalid)
			}
			return o.value, nil
		case <-deadline:
			g.stop(fmt.Errorf("exceeded its time limit of %s", c.limits.timeout))
			deadline, abandon = nil, time.After(abandonGrace)
		case <-tick.C:
			heap := heapBytes()
			if heap-base > c.limits.memory {
				g.stop(memoryError(c.limits.memory))
			}
			base = min(base, heap)
		case <-abandon:
			return nil, fmt.Errorf("exceeded its time limit of %s and did not stop within %s; abandoned", c.limits.timeout, abandonGrace)
		}
	}
}

type outcome struct {
	value   any    // what the script returned, as read
	invalid string // a return value that is not a valid result
	err     error  // the script failed
}

// execute runs a compiled script in a fresh, sandboxed interpreter.
func execute(proto *lua.FunctionProto, globals map[string]any, read func(lua.LValue) outcome, g *guard, memory int64) (o outcome) {
	defer g.stop(errFinished)
	L := lua.NewState(lua.Options{
		SkipOpenLibs:        true,
		CallStackSize:       callStackSize,
		RegistrySize:        registrySize,
		RegistryMaxSize:     registryMaxSize,
		MinimizeStackMemory: true,
	})
	defer L.Close()
	m := newMeter(memory, g)
	if err := openSandbox(L, m); err != nil {
		return outcome{err: err}
	}
	for name, v := range globals {
		L.SetGlobal(name, toLua(L, v))
	}
	L.SetContext(g)
	L.Push(L.NewFunctionFromProto(proto))
	L.Push(L.NewFunction(m.concat)) // the chunk's concatLocal
	if err := L.PCall(1, 1, nil); err != nil {
		var apiErr *lua.ApiError
		if errors.As(err, &apiErr) {
			return outcome{err: errors.New(apiErr.Object.String())}
		}
		return outcome{err: err}
	}
	return read(L.Get(-1))
}

// toResult reads the table a script returned.
func toResult(v lua.LValue) outcome {
	t, ok := v.(*lua.LTable)
	if !ok {
		return outcome{invalid: fmt.Sprintf("returned %s, want a table {status = ..., message = ...}", v.Type())}
	}
	st, ok := t.RawGetString("status").(lua.LString)
	if !ok {
		return outcome{invalid: fmt.Sprintf("returned a status of type %s, want one of Healthy, Suspended, Progressing, Missing, Degraded, Unknown", t.RawGetString("status").Type())}
	}
	status := appspec.HealthStatus(st)
	if !validStatus(status) {
		return outcome{invalid: fmt.Sprintf("returned an invalid status %q, want one of Healthy, Suspended, Progressing, Missing, Degraded, Unknown", string(st))}
	}
	var msg string
	switch m := t.RawGetString("message").(type) {
	case lua.LString, lua.LNumber:
		msg = m.String()
	case *lua.LNilType:
	default:
		return outcome{invalid: fmt.Sprintf("returned a message of type %s, want a string", m.Type())}
	}
	return outcome{value: Result{Status: status, Message: msg}}
}

// toLua converts a JSON-like value: maps and arrays become tables (arrays
// 1-based), numbers become numbers. Map keys are set in sorted order so that
// pairs() walks them the same way every time.
func toLua(L *lua.LState, v any) lua.LValue {
	switch x := v.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(x)
	case string:
		return lua.LString(x)
	case int64:
		return lua.LNumber(x)
	case int:
		return lua.LNumber(x)
	case int32:
		return lua.LNumber(x)
	case float64:
		return lua.LNumber(x)
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return lua.LNumber(f)
		}
		return lua.LString(x)
	case []any:
		t := L.CreateTable(len(x), 0)
		for i, e := range x {
			t.RawSetInt(i+1, toLua(L, e))
		}
		return t
	case map[string]any:
		t := L.CreateTable(0, len(x))
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			t.RawSetString(k, toLua(L, x[k]))
		}
		return t
	}
	return lua.LString(fmt.Sprint(v))
}

var errFinished = errors.New("finished")

func memoryError(limit int64) error {
	return fmt.Errorf("exceeded its memory budget of %s", byteSize(limit))
}

func byteSize(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// guard is the context of one run. gopher-lua calls Done before every
// instruction, which is where the instruction budget is counted. Done always
// returns the same channel, closed by stop.
type guard struct {
	parent context.Context
	budget int64
	left   atomic.Int64
	done   chan struct{}
	once   sync.Once
	err    error // set once, before done is closed
}

var _ context.Context = (*guard)(nil)

func newGuard(parent context.Context, instructions int64) *guard {
	g := &guard{parent: parent, budget: instructions, done: make(chan struct{})}
	g.left.Store(instructions)
	return g
}

func (g *guard) Deadline() (time.Time, bool) { return g.parent.Deadline() }
func (g *guard) Value(key any) any           { return g.parent.Value(key) }

func (g *guard) Done() <-chan struct{} {
	if g.left.Add(-1) == 0 {
		g.stop(fmt.Errorf("exceeded its instruction budget of %d instructions", g.budget))
	}
	return g.done
}

func (g *guard) Err() error {
	select {
	case <-g.done:
		return g.err
	default:
		return nil
	}
}

// stop ends the run with err; only the first call counts.
func (g *guard) stop(err error) {
	g.once.Do(func() {
		g.err = err
		close(g.done)
	})
}

// heapBytes is the memory of live and not yet swept heap objects.
func heapBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}
