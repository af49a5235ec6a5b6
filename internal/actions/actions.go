package actions

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/health"
)

// Action is an action available for an object.
type Action struct {
	Name string `json:"name"`
	// Disabled says the action exists for the kind but does not apply to
	// the object as it is (resume of a Deployment that is not paused).
	Disabled bool    `json:"disabled,omitempty"`
	Params   []Param `json:"params,omitempty"`
	// Source is "builtin" or "lua".
	Source string `json:"source"`
}

// Param is a parameter an action takes.
type Param struct {
	Name    string `json:"name"`
	Type    string `json:"type,omitempty"`
	Default string `json:"default,omitempty"`
}

// Sources of an Action.
const (
	SourceBuiltin = "builtin"
	SourceLua     = "lua"
)

// Operation types.
const (
	OpPatch  = "patch"
	OpCreate = "create"
)

// Operation is one change an action makes: a patch of the object it ran
// on (Object is the object as changed) or the creation of Object.
type Operation struct {
	Type   string
	Object *unstructured.Unstructured
}

// Errors of Run, which retrying cannot fix; their types are wire
// contracts (the API maps them to statuses).
var (
	// ErrUnknown: no action of that name exists for the object's kind.
	ErrUnknown = failure.Permanent("UnknownAction", "no such action for this kind")
	// ErrDisabled: the action exists but is disabled for the object.
	ErrDisabled = failure.Permanent("ActionDisabled", "action is disabled for this object")
	// ErrInvalid: a parameter is wrong, or the action failed or returned
	// something that cannot be applied.
	ErrInvalid = failure.Permanent("InvalidAction", "invalid action")
)

const (
	actionsDir    = "actions"
	discoveryFile = "discovery.lua"
	actionFile    = "action.lua"
)

// Options configure a Catalog.
type Options struct {
	// CustomizationsDir is the tree of Lua scripts in Argo CD's
	// resource_customizations layout ("": built-ins only).
	CustomizationsDir string
	// Sandbox runs the scripts under its limits (nil: the defaults).
	Sandbox *health.Checker
}

// kindScripts are the Lua scripts of one kind.
type kindScripts struct {
	discovery *health.Script
	actions   map[string]*health.Script
}

// Catalog lists and runs actions. It is safe for concurrent use.
type Catalog struct {
	lua map[string]*kindScripts // by "group/Kind", "Kind" for the core group
	// wild are the keys of lua that hold "*" (FromScripts).
	wild []wildKey
	// now is the clock of restart and create-job.
	now func() time.Time
}

// New loads the scripts of opts.CustomizationsDir.
func New(opts Options) (*Catalog, error) {
	c := &Catalog{lua: map[string]*kindScripts{}, now: time.Now}
	if opts.CustomizationsDir == "" {
		return c, nil
	}
	sb := opts.Sandbox
	if sb == nil {
		var err error
		if sb, err = health.New(health.Options{}); err != nil {
			return nil, err
		}
	}
	if err := c.load(opts.CustomizationsDir, sb); err != nil {
		return nil, fmt.Errorf("resource actions %s: %w", opts.CustomizationsDir, err)
	}
	return c, nil
}

// load compiles <key>/actions/discovery.lua and
// <key>/actions/<name>/action.lua, where key is <group>/<Kind> or <Kind>.
func (c *Catalog) load(dir string, sb *health.Checker) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		key, name, ok := scriptPath(parts)
		if !ok {
			return nil
		}
		src, err := health.ReadScript(path)
		if err != nil {
			return err
		}
		ks := c.lua[key]
		if ks == nil {
			ks = &kindScripts{actions: map[string]*health.Script{}}
			c.lua[key] = ks
		}
		s := sb.Compile(filepath.ToSlash(rel), src)
		if name == "" {
			ks.discovery = s
		} else {
			ks.actions[name] = s
		}
		return nil
	})
}

// scriptPath reads a path of the tree: the kind's key and the action's
// name ("" for discovery.lua).
func scriptPath(parts []string) (key, name string, ok bool) {
	n := len(parts)
	switch {
	case n >= 3 && n <= 4 && parts[n-1] == discoveryFile && parts[n-2] == actionsDir:
		return strings.Join(parts[:n-2], "/"), "", true
	case n >= 4 && n <= 5 && parts[n-1] == actionFile && parts[n-3] == actionsDir:
		return strings.Join(parts[:n-3], "/"), parts[n-2], true
	}
	return "", "", false
}

// kindKey is Argo CD's key of an object's kind.
func kindKey(obj *unstructured.Unstructured) string {
	gvk := obj.GroupVersionKind()
	if gvk.Group == "" {
		return gvk.Kind
	}
	return gvk.Group + "/" + gvk.Kind
}

// List returns the actions available for obj, by name.
func (c *Catalog) List(obj *unstructured.Unstructured) ([]Action, error) {
	byName := map[string]Action{}
	for _, a := range builtinActions(obj) {
		byName[a.Name] = a
	}
	ks := c.scriptsFor(obj)
	if ks != nil && ks.discovery != nil {
		found, err := discover(ks.discovery, obj)
		if err != nil {
			return nil, err
		}
		for _, a := range found {
			if _, builtin := byName[a.Name]; builtin && ks.actions[a.Name] == nil {
				continue // discovery names a built-in it has no script for
			}
			byName[a.Name] = a
		}
	}
	out := make([]Action, 0, len(byName))
	for _, a := range byName {
		out = append(out, a)
	}
	slices.SortFunc(out, func(x, y Action) int { return strings.Compare(x.Name, y.Name) })
	return out, nil
}

// discover runs a discovery script.
func discover(s *health.Script, obj *unstructured.Unstructured) ([]Action, error) {
	v, err := s.Run(map[string]any{"obj": obj.Object})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	table, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: discovery script returned %s, want a table of actions by name", ErrInvalid, luaType(v))
	}
	out := make([]Action, 0, len(table))
	for name, spec := range table {
		a := Action{Name: name, Source: SourceLua}
		fields, _ := spec.(map[string]any)
		if d, ok := fields["disabled"].(bool); ok {
			a.Disabled = d
		}
		params, _ := fields["params"].([]any)
		for _, p := range params {
			pm, ok := p.(map[string]any)
			if !ok {
				continue
			}
			pn, _ := pm["name"].(string)
			if pn == "" {
				continue
			}
			a.Params = append(a.Params, Param{Name: pn, Type: str(pm["type"]), Default: str(pm["default"])})
		}
		out = append(out, a)
	}
	return out, nil
}

// luaType names the Lua type of a value a script returned.
func luaType(v any) string {
	switch v.(type) {
	case nil:
		return "nil"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, float64:
		return "a number"
	case []any:
		return "a list"
	}
	return "a table"
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// Run runs the action name on obj with params and returns what to apply.
// It applies nothing.
func (c *Catalog) Run(obj *unstructured.Unstructured, name string, params map[string]string) ([]Operation, error) {
	avail, err := c.List(obj)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(avail, func(a Action) bool { return a.Name == name })
	if i < 0 {
		return nil, fmt.Errorf("%w: %s has no action %q", ErrUnknown, kindKey(obj), name)
	}
	if avail[i].Disabled {
		return nil, fmt.Errorf("%w: %s on %s %s", ErrDisabled, name, obj.GetKind(), obj.GetName())
	}
	var ops []Operation
	if ks := c.scriptsFor(obj); ks != nil && ks.actions[name] != nil {
		ops, err = runLua(ks.actions[name], obj, params)
	} else {
		ops, err = runBuiltin(obj, name, params, c.now())
	}
	if err != nil {
		return nil, err
	}
	if err := check(obj, ops); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, name, err)
	}
	return ops, nil
}

// runLua runs an action script: v1 returns the object, v2 a list of
// operations.
func runLua(s *health.Script, obj *unstructured.Unstructured, params map[string]string) ([]Operation, error) {
	ap := make(map[string]any, len(params))
	for k, v := range params {
		ap[k] = v
	}
	v, err := s.Run(map[string]any{"obj": obj.DeepCopy().Object, "actionParams": ap})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	switch x := v.(type) {
	case map[string]any:
		return []Operation{{Type: OpPatch, Object: &unstructured.Unstructured{Object: restoreLists(obj.Object, x).(map[string]any)}}}, nil
	case []any:
		ops := make([]Operation, 0, len(x))
		for i, e := range x {
			m, _ := e.(map[string]any)
			typ, _ := m["operation"].(string)
			res, ok := m["resource"].(map[string]any)
			if (typ != OpPatch && typ != OpCreate) || !ok {
				return nil, fmt.Errorf("%w: operation %d: want {operation = \"patch\" | \"create\", resource = {...}}", ErrInvalid, i+1)
			}
			if typ == OpPatch {
				res = restoreLists(obj.Object, res).(map[string]any)
			}
			ops = append(ops, Operation{Type: typ, Object: &unstructured.Unstructured{Object: res}})
		}
		return ops, nil
	}
	return nil, fmt.Errorf("%w: action returned %s, want the changed object or a list of operations", ErrInvalid, luaType(v))
}

// restoreLists turns the empty objects of changed back into empty lists
// where orig has a list: Lua has one empty table for both.
func restoreLists(orig, changed any) any {
	switch c := changed.(type) {
	case map[string]any:
		o, _ := orig.(map[string]any)
		if len(c) == 0 {
			if _, isList := orig.([]any); isList {
				return []any{}
			}
		}
		for k, v := range c {
			c[k] = restoreLists(o[k], v)
		}
		return c
	case []any:
		o, _ := orig.([]any)
		for i, v := range c {
			var ov any
			if i < len(o) {
				ov = o[i]
			}
			c[i] = restoreLists(ov, v)
		}
		return c
	}
	return changed
}

// check refuses operations that are not a patch of obj itself or the
// creation of an object in obj's namespace.
func check(obj *unstructured.Unstructured, ops []Operation) error {
	if len(ops) == 0 {
		return errors.New("it returned no operations")
	}
	for _, op := range ops {
		o := op.Object
		if o.GetKind() == "" || o.GetAPIVersion() == "" {
			return fmt.Errorf("a %s operation's object has no apiVersion or kind", op.Type)
		}
		switch op.Type {
		case OpPatch:
			if o.GroupVersionKind().GroupKind() != obj.GroupVersionKind().GroupKind() || o.GetName() != obj.GetName() || o.GetNamespace() != obj.GetNamespace() {
				return fmt.Errorf("a patch may only change %s %s, not %s %s", obj.GetKind(), obj.GetName(), o.GetKind(), o.GetName())
			}
		case OpCreate:
			if o.GetName() == "" && o.GetGenerateName() == "" {
				return fmt.Errorf("the %s to create has no name", o.GetKind())
			}
			if o.GetNamespace() == "" {
				o.SetNamespace(obj.GetNamespace())
			}
			if o.GetNamespace() != obj.GetNamespace() {
				return fmt.Errorf("the %s to create is in namespace %q, not %q", o.GetKind(), o.GetNamespace(), obj.GetNamespace())
			}
		}
	}
	return nil
}

// Scripts are one kind's Lua action scripts, as source: the discovery
// script and each action's script by name.
type Scripts struct {
	Discovery string
	Actions   map[string]string
}

// FromScripts makes a catalog of the built-ins and of scripts keyed by
// "group/Kind" ("Kind" for the core group), where "*" in a key matches any
// text, as in health keys. sb runs them (nil: the defaults).
func FromScripts(scripts map[string]Scripts, sb *health.Checker) (*Catalog, error) {
	c := &Catalog{lua: map[string]*kindScripts{}, now: time.Now}
	if len(scripts) == 0 {
		return c, nil
	}
	if sb == nil {
		var err error
		if sb, err = health.New(health.Options{}); err != nil {
			return nil, err
		}
	}
	for key, s := range scripts {
		ks := &kindScripts{actions: map[string]*health.Script{}}
		if s.Discovery != "" {
			ks.discovery = sb.Compile(key+"/actions/"+discoveryFile, s.Discovery)
		}
		for name, src := range s.Actions {
			ks.actions[name] = sb.Compile(key+"/actions/"+name+"/"+actionFile, src)
		}
		c.lua[key] = ks
		if strings.Contains(key, "*") {
			c.wild = append(c.wild, wildKey{key: key, re: wildcard(key)})
		}
	}
	slices.SortFunc(c.wild, func(x, y wildKey) int { return strings.Compare(x.key, y.key) })
	return c, nil
}

// wildKey is a script key holding "*", and its pattern.
type wildKey struct {
	key string
	re  *regexp.Regexp
}

// wildcard compiles a key in which "*" matches any text.
func wildcard(key string) *regexp.Regexp {
	return regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(key), `\*`, ".*") + "$")
}

// scriptsFor are the Lua scripts of obj's kind: of its exact key, else of
// the first wildcard key (in order) that matches it.
func (c *Catalog) scriptsFor(obj *unstructured.Unstructured) *kindScripts {
	key := kindKey(obj)
	if ks := c.lua[key]; ks != nil {
		return ks
	}
	for _, w := range c.wild {
		if w.re.MatchString(key) {
			return c.lua[w.key]
		}
	}
	return nil
}
