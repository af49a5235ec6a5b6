package health

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

const (
	// scriptFile is the name of a health script in a customizations tree.
	scriptFile = "health.lua"
	// maxScriptBytes bounds the size of one script.
	maxScriptBytes = 1 << 20
	// inlinePrefix is argocd-cm's key prefix, accepted on inline keys.
	inlinePrefix = "resource.customizations.health."
)

// script is one compiled health script. proto is shared by every run: a
// FunctionProto is read-only once compiled.
type script struct {
	name  string // where it came from, for messages
	key   string // the "group/Kind" it was configured for, maybe with "*"
	proto *lua.FunctionProto
	err   error  // why it did not compile
	src   string // the source, for Snapshot
}

// wildcard is a script whose key has "*" in it.
type wildcard struct {
	pattern string
	s       *script
}

// layer is one source of scripts: exact keys first, then wildcards in order.
type layer struct {
	exact     map[string]*script
	wildcards []wildcard
}

func (l layer) find(key string) *script {
	if s, ok := l.exact[key]; ok {
		return s
	}
	for _, w := range l.wildcards {
		if globMatch(w.pattern, key) {
			return w.s
		}
	}
	return nil
}

func (l *layer) add(key string, s *script) {
	if strings.Contains(key, "*") {
		l.wildcards = append(l.wildcards, wildcard{pattern: key, s: s})
		return
	}
	if l.exact == nil {
		l.exact = map[string]*script{}
	}
	l.exact[key] = s
}

// script returns the script for a "group/Kind" key, or nil.
func (c *Checker) script(key string) *script {
	for _, l := range c.scripts {
		if s := l.find(key); s != nil {
			return s
		}
	}
	return nil
}

func compile(name, key, src string) *script {
	s := &script{name: name, key: key, src: src}
	chunk, err := parse.Parse(strings.NewReader(src), name)
	if err == nil {
		s.proto, err = lua.Compile(meterConcat(chunk), name)
	}
	if err != nil {
		// gopher-lua's syntax errors span lines and pad with spaces.
		s.err = fmt.Errorf("does not compile: %s", strings.Join(strings.Fields(err.Error()), " "))
	}
	return s
}

// loadInline compiles inline scripts. Wildcards are tried in key order, so
// the choice among several that match does not depend on map order.
func loadInline(in map[string]string) (layer, error) {
	var l layer
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		key, err := inlineKey(k)
		if err != nil {
			return layer{}, err
		}
		l.add(key, compile("inline "+key, key, in[k]))
	}
	return l, nil
}

// inlineKey turns an inline key into "group/Kind" ("Kind" for the core
// group). argocd-cm's "group_Kind" form is accepted.
func inlineKey(k string) (string, error) {
	key := strings.TrimPrefix(k, inlinePrefix)
	if !strings.Contains(key, "/") {
		if group, kind, ok := strings.Cut(key, "_"); ok {
			key = group + "/" + kind
			if group == "" {
				key = kind
			}
		}
	}
	group, kind, hasGroup := strings.Cut(key, "/")
	if !hasGroup {
		group, kind = "", key
	}
	if kind == "" || (hasGroup && group == "") || strings.ContainsAny(kind, "/_") || strings.ContainsAny(group, "_ ") {
		return "", fmt.Errorf("health script key %q: want group/Kind, Kind for the core group, or group_Kind", k)
	}
	return key, nil
}

// loadDir compiles the health.lua files of a customizations tree: at
// <group>/<Kind>/health.lua, or <Kind>/health.lua for the core group. A "_"
// in a directory name is a wildcard. Wildcards are tried in the order of the
// tree (lexical), after every exact match.
func loadDir(dir string) (layer, error) {
	var l layer
	info, err := os.Stat(dir)
	if err != nil {
		return layer{}, fmt.Errorf("health customizations: %w", err)
	}
	if !info.IsDir() {
		return layer{}, fmt.Errorf("health customizations: %s is not a directory", dir)
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		depth := strings.Count(rel, "/") + 1
		if d.IsDir() {
			if rel != "." && depth > 2 {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() != scriptFile || depth < 2 || !d.Type().IsRegular() {
			return nil
		}
		src, err := readScript(path)
		if err != nil {
			return err
		}
		key := strings.ReplaceAll(strings.TrimSuffix(rel, "/"+scriptFile), "_", "*")
		l.add(key, compile(rel, key, src))
		return nil
	})
	if err != nil {
		return layer{}, fmt.Errorf("health customizations %s: %w", dir, err)
	}
	return l, nil
}

func readScript(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, maxScriptBytes+1))
	if err != nil {
		return "", err
	}
	if len(src) > maxScriptBytes {
		return "", fmt.Errorf("%s is larger than %d bytes", path, maxScriptBytes)
	}
	return string(src), nil
}

// globMatch reports whether s matches pattern, where "*" matches any run of
// characters ("/" included) and everything else matches itself.
func globMatch(pattern, s string) bool {
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// CompileErrors returns the errors of the configured scripts that did not
// compile, or nil. Objects such a script applies to are Unknown; a loader
// that must not replace a working set with a broken one checks this first.
func (c *Checker) CompileErrors() error {
	var errs []error
	for _, l := range c.scripts {
		keys := make([]string, 0, len(l.exact))
		for k := range l.exact {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if s := l.exact[k]; s.err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", s.name, s.err))
			}
		}
		for _, w := range l.wildcards {
			if w.s.err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", w.s.name, w.s.err))
			}
		}
	}
	return errors.Join(errs...)
}
