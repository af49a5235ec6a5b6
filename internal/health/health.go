package health

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// Result is a health status with a human-readable message.
type Result struct {
	Status  appspec.HealthStatus `json:"status"`
	Message string               `json:"message"`
	// ScriptError says a Lua health script failed: it raised an error,
	// broke a limit, did not compile or returned no valid result. Status
	// is then Unknown, as in Argo CD, and Message names the script.
	ScriptError bool `json:"scriptError,omitempty"`
}

// Options configure a Checker. The zero value has no Lua scripts and the
// default limits.
type Options struct {
	// CustomizationsDir is a tree of Lua health scripts in Argo CD's
	// resource_customizations layout: <group>/<Kind>/health.lua, or
	// <Kind>/health.lua for the core group. "_" in a directory name matches
	// any run of characters, as "*" does.
	CustomizationsDir string
	// Inline maps a group and kind to a Lua health script. Keys are
	// "group/Kind" ("Kind" for the core group, "*" as a wildcard) or argocd-cm's
	// "group_Kind", with or without the "resource.customizations.health."
	// prefix. Inline scripts take precedence over CustomizationsDir.
	Inline map[string]string
	// Timeout bounds one script run; default 1s.
	Timeout time.Duration
	// MaxInstructions bounds the Lua instructions of one run; default 10 million.
	MaxInstructions int64
	// MemoryLimit bounds both the bytes the string library may produce in one
	// run and the heap growth allowed while a script runs; default 64 MiB.
	MemoryLimit int64
}

// Defaults of Options.
const (
	DefaultTimeout         = time.Second
	DefaultMaxInstructions = 10_000_000
	DefaultMemoryLimit     = 64 << 20
)

// Checker assesses health. Create it with New; it is safe for concurrent use.
type Checker struct {
	scripts []layer // inline first, then the directory tree
	limits  limits
}

// New loads and compiles the configured scripts. A script that does not
// compile is not an error here: objects it applies to are Unknown, with the
// compile error as the message. Unreadable directories and malformed inline
// keys are errors.
func New(opts Options) (*Checker, error) {
	lim := newLimits(opts.Timeout, opts.MaxInstructions, opts.MemoryLimit)
	inline, err := loadInline(opts.Inline)
	if err != nil {
		return nil, err
	}
	c := &Checker{scripts: []layer{inline}, limits: lim}
	if opts.CustomizationsDir != "" {
		dir, err := loadDir(opts.CustomizationsDir)
		if err != nil {
			return nil, err
		}
		c.scripts = append(c.scripts, dir)
	}
	return c, nil
}

// newLimits fills in the defaults of limits not set (zero or less).
func newLimits(timeout time.Duration, instructions, memory int64) limits {
	lim := limits{timeout: timeout, instructions: instructions, memory: memory}
	if lim.timeout <= 0 {
		lim.timeout = DefaultTimeout
	}
	if lim.instructions <= 0 {
		lim.instructions = DefaultMaxInstructions
	}
	if lim.memory <= 0 {
		lim.memory = DefaultMemoryLimit
	}
	return lim
}

// defaultChecker has the built-in checks and kstatus, and no scripts.
var defaultChecker = &Checker{limits: limits{timeout: DefaultTimeout, instructions: DefaultMaxInstructions, memory: DefaultMemoryLimit}}

// Assess returns the health of a live object with the built-in checks and
// kstatus only; nil means Missing.
func Assess(obj *unstructured.Unstructured) Result {
	return defaultChecker.Assess(obj)
}

// Assess returns the health of a live object; nil means Missing.
func (c *Checker) Assess(obj *unstructured.Unstructured) Result {
	if obj == nil {
		return Result{Status: appspec.HealthMissing, Message: "resource does not exist"}
	}
	if obj.GetDeletionTimestamp() != nil {
		return Result{Status: appspec.HealthProgressing, Message: "pending deletion"}
	}
	var r Result
	key := groupKindKey(obj)
	if s := c.script(key); s != nil {
		r = c.run(s, key, obj)
	} else if check := builtin(obj); check != nil {
		r = check(obj)
	} else if g, ok := generic(obj); ok {
		r = g
	} else {
		r = Result{Status: appspec.HealthHealthy}
	}
	if r.Status != appspec.HealthHealthy && r.Message == "" {
		r.Message = strings.Join(strings.Fields(fmt.Sprintf("%s %s is %s", obj.GetKind(), obj.GetName(), r.Status)), " ")
	}
	return r
}

// groupKindKey is Argo CD's key for a kind: "group/Kind", or "Kind" for the
// core group.
func groupKindKey(obj *unstructured.Unstructured) string {
	gvk := obj.GroupVersionKind()
	if gvk.Group == "" {
		return gvk.Kind
	}
	return gvk.Group + "/" + gvk.Kind
}

// validStatus says whether s is one of the six health statuses.
func validStatus(s appspec.HealthStatus) bool {
	switch s {
	case appspec.HealthHealthy, appspec.HealthSuspended, appspec.HealthProgressing,
		appspec.HealthMissing, appspec.HealthDegraded, appspec.HealthUnknown:
		return true
	}
	return false
}
