package health

import (
	"maps"
	"slices"
	"time"
)

// ScriptSource is one health script as source: the "group/Kind" key it
// applies to ("*" as a wildcard), the name messages give it, and the Lua.
type ScriptSource struct {
	Key    string `json:"key"`
	Name   string `json:"name"`
	Source string `json:"source"`
}

// Snapshot is a Checker's scripts as source, with its limits: enough for
// FromSnapshot to build a Checker that assesses every object the same way,
// in another process. Layers are in precedence order (inline, then tree);
// within a layer the exact keys come first, sorted, then the wildcards in
// the order they are tried.
type Snapshot struct {
	Layers          [][]ScriptSource `json:"layers"`
	Timeout         time.Duration    `json:"timeout"`
	MaxInstructions int64            `json:"maxInstructions"`
	MemoryLimit     int64            `json:"memoryLimit"`
}

// Snapshot returns c's scripts and limits.
func (c *Checker) Snapshot() Snapshot {
	out := Snapshot{Layers: make([][]ScriptSource, 0, len(c.scripts)),
		Timeout: c.limits.timeout, MaxInstructions: c.limits.instructions, MemoryLimit: c.limits.memory}
	for _, l := range c.scripts {
		var layer []ScriptSource
		for _, k := range slices.Sorted(maps.Keys(l.exact)) {
			s := l.exact[k]
			layer = append(layer, ScriptSource{Key: k, Name: s.name, Source: s.src})
		}
		for _, w := range l.wildcards {
			layer = append(layer, ScriptSource{Key: w.pattern, Name: w.s.name, Source: w.s.src})
		}
		out.Layers = append(out.Layers, layer)
	}
	return out
}

// FromSnapshot compiles a Snapshot's scripts into a Checker. As with New,
// a script that does not compile makes the objects it applies to Unknown;
// zero limits take the defaults.
func FromSnapshot(s Snapshot) *Checker {
	c := &Checker{limits: newLimits(s.Timeout, s.MaxInstructions, s.MemoryLimit)}
	for _, src := range s.Layers {
		var l layer
		for _, sc := range src {
			l.add(sc.Key, compile(sc.Name, sc.Key, sc.Source))
		}
		c.scripts = append(c.scripts, l)
	}
	return c
}
