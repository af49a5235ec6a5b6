package health

import (
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/pm"
)

// safeOS are the os functions a script may call: they read clocks and format
// times, and touch no file, process or environment.
var safeOS = []string{"time", "date", "clock", "difftime"}

// openSandbox opens the libraries a health script may use: base (without the
// functions that load code or files), table, string, and an os table with
// only safeOS. require returns the opened libraries by name, as Argo CD's
// scripts expect of require("os"), and loads nothing. Forbidden names are
// kept as stubs that fail with a clear message instead of "attempt to call a
// nil value".
func openSandbox(L *lua.LState, m *meter) error {
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.OsLibName, lua.OpenOs},
	} {
		if err := L.CallByParam(lua.P{Fn: L.NewFunction(lib.open), Protect: true}, lua.LString(lib.name)); err != nil {
			return fmt.Errorf("open the %s library: %w", lib.name, err)
		}
	}
	globals, ok := L.Get(lua.GlobalsIndex).(*lua.LTable)
	if !ok {
		return fmt.Errorf("no globals table")
	}
	for _, name := range []string{"dofile", "loadfile", "load", "loadstring", "module", "collectgarbage", "_printregs"} {
		globals.RawSetString(name, forbidden(L, name))
	}
	globals.RawSetString("print", L.NewFunction(func(*lua.LState) int { return 0 }))
	globals.RawSetString("io", forbiddenTable(L, L.NewTable(), "io"))

	full, ok := globals.RawGetString("os").(*lua.LTable)
	if !ok {
		return fmt.Errorf("no os table")
	}
	osTable := L.NewTable()
	for _, name := range safeOS {
		osTable.RawSetString(name, full.RawGetString(name))
	}
	globals.RawSetString("os", forbiddenTable(L, osTable, "os"))
	if loaded, ok := L.GetField(L.Get(lua.RegistryIndex), "_LOADED").(*lua.LTable); ok {
		loaded.RawSetString("os", osTable)
	}
	globals.RawSetString("require", L.NewFunction(func(L *lua.LState) int {
		name := L.CheckString(1)
		switch name {
		case lua.OsLibName, lua.StringLibName, lua.TabLibName:
			L.Push(globals.RawGetString(name))
			return 1
		}
		L.RaiseError("require(%q) is not available in health scripts; only os, string and table are", name)
		return 0
	}))

	str, ok := globals.RawGetString("string").(*lua.LTable)
	if !ok {
		return fmt.Errorf("no string table")
	}
	tbl, ok := globals.RawGetString("table").(*lua.LTable)
	if !ok {
		return fmt.Errorf("no table table")
	}
	return m.install(L, str, tbl)
}

func forbidden(L *lua.LState, name string) *lua.LFunction {
	return L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("%s is not available in health scripts", name)
		return 0
	})
}

// forbiddenTable makes reading a missing field of t an error naming it.
func forbiddenTable(L *lua.LState, t *lua.LTable, name string) *lua.LTable {
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("%s.%s is not available in health scripts", name, lua.LVAsString(L.Get(2)))
		return 0
	}))
	L.SetMetatable(t, mt)
	return t
}

// meter is the budget of bytes the string library may produce in one run.
// It is used by the run's goroutine only.
type meter struct {
	limit, left int64
	g           *guard
}

func newMeter(limit int64, g *guard) *meter { return &meter{limit: limit, left: limit, g: g} }

// check fails the run if n more bytes would exceed the budget.
func (m *meter) check(L *lua.LState, n int64) {
	if n > m.left {
		m.fail(L)
	}
}

// fail ends the run: the error raised here could be caught by pcall, but the
// stopped guard fails the next instruction too.
func (m *meter) fail(L *lua.LState) {
	err := memoryError(m.limit)
	m.g.stop(err)
	L.RaiseError("%v", err)
}

func (m *meter) charge(L *lua.LState, n int64) {
	m.check(L, n)
	m.left -= n
}

// install replaces the string and table functions that can build large
// strings with metered versions. The string table is also the __index of
// strings, so s:rep(n) is metered too.
func (m *meter) install(L *lua.LState, str, tbl *lua.LTable) error {
	orig := map[string]lua.LGFunction{}
	for _, lib := range []struct {
		t     *lua.LTable
		names []string
	}{{str, []string{"rep", "format", "gsub", "upper", "lower", "reverse"}}, {tbl, []string{"concat"}}} {
		for _, name := range lib.names {
			f, ok := lib.t.RawGetString(name).(*lua.LFunction)
			if !ok || f.GFunction == nil {
				return fmt.Errorf("no %s function to meter", name)
			}
			orig[name] = f.GFunction
		}
	}
	sameLength := func(name string) lua.LGFunction {
		return func(L *lua.LState) int {
			m.charge(L, int64(len(L.CheckString(1))))
			return orig[name](L)
		}
	}
	for name, f := range map[string]lua.LGFunction{
		"upper":   sameLength("upper"),
		"lower":   sameLength("lower"),
		"reverse": sameLength("reverse"),
		"rep": func(L *lua.LState) int {
			s, n := L.CheckString(1), L.CheckInt(2)
			if n > 0 && len(s) > 0 {
				if int64(n) > m.left/int64(len(s)) {
					m.fail(L)
				}
				m.charge(L, int64(len(s))*int64(n))
			}
			return orig["rep"](L)
		},
		"format": func(L *lua.LState) int {
			if err := checkFormat(L.CheckString(1)); err != nil {
				L.ArgError(1, err.Error())
			}
			n := orig["format"](L)
			m.charge(L, int64(len(lua.LVAsString(L.Get(-1)))))
			return n
		},
		"gsub": func(L *lua.LState) int {
			m.gsub(L)
			n := orig["gsub"](L)
			m.charge(L, int64(len(lua.LVAsString(L.Get(-n)))))
			return n
		},
	} {
		str.RawSetString(name, L.NewFunction(f))
	}
	tbl.RawSetString("concat", L.NewFunction(func(L *lua.LState) int {
		m.check(L, concatSize(L))
		n := orig["concat"](L)
		m.charge(L, int64(len(lua.LVAsString(L.Get(-1)))))
		return n
	}))
	return nil
}

// gsub checks a gsub call before it runs. gopher-lua copies the whole string
// once per match, so the work is bounded first; then the size of the result
// is bounded for a string replacement, computed for a table, and charged
// replacement by replacement for a function.
func (m *meter) gsub(L *lua.LState) {
	s, pat := L.CheckString(1), L.CheckString(2)
	L.CheckTypes(3, lua.LTString, lua.LTTable, lua.LTFunction)
	matches, err := pm.Find(pat, []byte(s), 0, L.OptInt(4, -1))
	if err != nil {
		return // the original reports a bad pattern
	}
	if int64(len(matches))*int64(len(s)) > gsubWorkLimit {
		L.RaiseError("gsub: %d matches in a string of %d bytes is too much work for a health script", len(matches), len(s))
	}
	switch repl := L.Get(3).(type) {
	case lua.LString:
		longest := 20 // a position capture is a number
		for _, md := range matches {
			longest = max(longest, md.Capture(1)-md.Capture(0))
		}
		refs := strings.Count(string(repl), "%")
		m.check(L, int64(len(s))+int64(len(matches))*(int64(len(repl))+int64(refs)*int64(longest)))
	case *lua.LTable:
		size := int64(len(s))
		for _, md := range matches {
			idx := 0
			if md.CaptureLength() > 2 {
				idx = 2
			}
			var v lua.LValue
			if md.IsPosCapture(idx) {
				v = L.GetTable(repl, lua.LNumber(md.Capture(idx)))
			} else {
				v = L.GetField(repl, s[md.Capture(idx):md.Capture(idx+1)])
			}
			if lua.LVCanConvToString(v) {
				size += int64(len(lua.LVAsString(v)))
			}
		}
		m.check(L, size)
	case *lua.LFunction:
		L.Replace(3, L.NewFunction(func(L *lua.LState) int {
			n := L.GetTop()
			L.Push(repl)
			for i := 1; i <= n; i++ {
				L.Push(L.Get(i))
			}
			L.Call(n, 1)
			if v := L.Get(-1); lua.LVCanConvToString(v) {
				m.charge(L, int64(len(lua.LVAsString(v))))
			}
			return 1
		}))
	}
}

// concatSize is the size table.concat(t, sep, i, j) would produce, with the
// same clamping of i and j as gopher-lua.
func concatSize(L *lua.LState) int64 {
	t := L.CheckTable(1)
	sep := L.OptString(2, "")
	n := t.Len()
	i, j := max(min(L.OptInt(3, 1), n), 1), min(L.OptInt(4, n), n)
	var size int64
	for k := i; k <= j; k++ {
		v := t.RawGetInt(k)
		if !lua.LVCanConvToString(v) {
			break // the original fails here
		}
		size += int64(len(lua.LVAsString(v)) + len(sep))
	}
	return size
}

// checkFormat rejects what Lua 5.1 rejects and Go's fmt would expand: widths
// and precisions of more than two digits. It also rejects Go's argument
// indexes and * widths, which Lua does not have.
func checkFormat(f string) error {
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		i++
		if i < len(f) && f[i] == '%' {
			continue
		}
		for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
			i++
		}
		for _, part := range []string{"width", "precision"} {
			if part == "precision" {
				if i >= len(f) || f[i] != '.' {
					break
				}
				i++
			}
			start := i
			for i < len(f) && f[i] >= '0' && f[i] <= '9' {
				i++
			}
			if i-start > 2 {
				return fmt.Errorf("invalid format (%s longer than two digits)", part)
			}
		}
		if i < len(f) && (f[i] == '[' || f[i] == '*') {
			return fmt.Errorf("invalid format (%q is not supported)", f[i])
		}
	}
	return nil
}
