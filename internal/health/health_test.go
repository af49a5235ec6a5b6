package health

import (
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/windlass-cd/windlass/internal/appspec"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const (
	stHealthy     = appspec.HealthHealthy
	stSuspended   = appspec.HealthSuspended
	stProgressing = appspec.HealthProgressing
	stMissing     = appspec.HealthMissing
	stDegraded    = appspec.HealthDegraded
	stUnknown     = appspec.HealthUnknown
)

// fixture reads testdata/objects/<name>.yaml.
func fixture(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "objects", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(js); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return obj
}

// golden compares got with testdata/golden/<name>.json, or rewrites it with -update.
func golden(t *testing.T, name string, got map[string]Result) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".json")
	if *update {
		b, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	var want map[string]Result
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results differ from %s (-want +got):\n%s", path, diff)
	}
}

// Built-in checks, kstatus and the generic rules, one fixture per case. The
// table holds the expected status; the golden file holds the messages.
func TestAssessBuiltin(t *testing.T) {
	tests := []struct {
		fixture string
		want    appspec.HealthStatus
	}{
		{"deployment-healthy", stHealthy},
		{"deployment-stale-generation", stProgressing},
		{"deployment-updating", stProgressing},
		{"deployment-old-replicas", stProgressing},
		{"deployment-unavailable", stProgressing},
		{"deployment-paused", stSuspended},
		{"deployment-deadline-exceeded", stDegraded},
		{"statefulset-healthy", stHealthy},
		{"statefulset-stale-generation", stProgressing},
		{"statefulset-not-ready", stProgressing},
		{"statefulset-partition-progressing", stProgressing},
		{"statefulset-partition-done", stHealthy},
		{"statefulset-ondelete", stHealthy},
		{"statefulset-revision-progressing", stProgressing},
		{"daemonset-healthy", stHealthy},
		{"daemonset-stale-generation", stProgressing},
		{"daemonset-updating", stProgressing},
		{"daemonset-unavailable", stProgressing},
		{"daemonset-ondelete", stHealthy},
		{"replicaset-healthy", stHealthy},
		{"replicaset-progressing", stProgressing},
		{"replicaset-failure", stDegraded},
		{"pod-running-ready", stHealthy},
		{"pod-pending", stProgressing},
		{"pod-crashloop", stDegraded},
		{"pod-imagepullbackoff", stDegraded},
		{"pod-errimagepull", stDegraded},
		{"pod-hook-imagepullbackoff", stProgressing},
		{"pod-succeeded-restart-always", stHealthy},
		{"pod-failed-exit-code", stDegraded},
		{"pod-failed-oomkilled", stDegraded},
		{"pod-running-restarted", stDegraded},
		{"pod-running-not-ready", stProgressing},
		{"pod-running-restart-never", stProgressing},
		{"pod-running-ignore-restart-policy", stHealthy},
		{"pod-unknown-phase", stUnknown},
		{"job-complete", stHealthy},
		{"job-failed", stDegraded},
		{"job-running", stProgressing},
		{"job-suspended", stSuspended},
		{"cronjob-suspended", stSuspended},
		{"cronjob-active", stProgressing},
		{"cronjob-never-run", stHealthy},
		{"cronjob-succeeded", stHealthy},
		{"cronjob-failed", stDegraded},
		{"cronjob-no-status", stProgressing},
		{"service-clusterip", stHealthy},
		{"service-loadbalancer-pending", stProgressing},
		{"service-loadbalancer-ready", stHealthy},
		{"ingress-pending", stProgressing},
		{"ingress-ready", stHealthy},
		{"pvc-bound", stHealthy},
		{"pvc-pending", stProgressing},
		{"pvc-lost", stDegraded},
		{"hpa-healthy", stHealthy},
		{"hpa-degraded", stDegraded},
		{"hpa-progressing", stProgressing},
		{"apiservice-available", stHealthy},
		{"apiservice-unavailable", stProgressing},
		{"apiservice-no-conditions", stProgressing},
		{"cr-ready-true", stHealthy},
		{"cr-ready-false", stProgressing},
		{"cr-stalled", stDegraded},
		{"cr-reconciling", stProgressing},
		{"cr-stale-generation", stProgressing},
		{"cr-no-status", stHealthy},
		{"configmap", stHealthy},
		{"deleting-deployment", stProgressing},
	}
	got := map[string]Result{}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			r := Assess(fixture(t, tt.fixture))
			if r.Status != tt.want {
				t.Errorf("status = %s (%q), want %s", r.Status, r.Message, tt.want)
			}
			if r.Status != stHealthy && r.Message == "" {
				t.Errorf("%s without a message", r.Status)
			}
			got[tt.fixture] = r
		})
	}
	golden(t, "builtin", got)

	if r := Assess(nil); r.Status != stMissing || r.Message == "" {
		t.Errorf("Assess(nil) = %+v, want Missing with a message", r)
	}
}

// Lua scripts from a directory tree and from inline configuration.
func TestAssessLua(t *testing.T) {
	inline := map[string]string{
		// argocd-cm style key; the script also checks how obj is converted.
		"resource.customizations.health.example.com_Gadget": `
			local s = obj.spec
			local ok = s.list[1] == "a" and s.list[2] == "b" and #s.list == 2 and s.list[0] == nil
			ok = ok and s.count == 3 and s.ratio == 0.5 and s.enabled == true and s.disabled == false and s.none == nil
			ok = ok and s.nested.deep.value == "x" and type(s.count) == "number"
			if not ok then return {status = "Degraded", message = "unexpected conversion"} end
			return {status = "Healthy", message = s.count}`,
	}
	dirOnly, err := New(Options{CustomizationsDir: filepath.Join("testdata", "customizations"), Inline: inline})
	if err != nil {
		t.Fatal(err)
	}
	overridden, err := New(Options{
		CustomizationsDir: filepath.Join("testdata", "customizations"),
		Inline: map[string]string{
			"example.com/Widget": `return {status = "Suspended", message = "inline wins"}`,
			"*.crossplane.io/*":  `return {status = "Degraded", message = "inline wildcard wins"}`,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		checker *Checker
		fixture string
		want    appspec.HealthStatus
	}{
		{"dir script ready", dirOnly, "lua-widget-ready", stHealthy},
		{"dir script failed", dirOnly, "lua-widget-failed", stDegraded},
		{"dir script without status", dirOnly, "lua-widget-new", stProgressing},
		{"wildcard dir", dirOnly, "lua-bucket", stHealthy},
		{"wildcard dir degraded", dirOnly, "lua-bucket-unsynced", stDegraded},
		{"core group dir", dirOnly, "lua-configmap-broken", stDegraded},
		{"script overrides built-in", dirOnly, "lua-deployment-canary", stHealthy},
		{"script does not compile", dirOnly, "lua-broken", stUnknown},
		{"inline argocd-cm key and conversion", dirOnly, "lua-gadget", stHealthy},
		{"deletion before script", dirOnly, "lua-deleting-widget", stProgressing},
		{"no script: kstatus", dirOnly, "cr-stalled", stDegraded},
		{"inline overrides dir", overridden, "lua-widget-ready", stSuspended},
		{"inline wildcard overrides dir", overridden, "lua-bucket", stDegraded},
		{"inline leaves other kinds", overridden, "lua-configmap-broken", stDegraded},
	}
	got := map[string]Result{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.checker.Assess(fixture(t, tt.fixture))
			if r.Status != tt.want {
				t.Errorf("status = %s (%q), want %s", r.Status, r.Message, tt.want)
			}
			got[tt.name] = r
		})
	}
	golden(t, "lua", got)
}

// inlineChecker is a Checker with opts whose only script is src, for key.
func inlineChecker(t *testing.T, key, src string, opts Options) *Checker {
	t.Helper()
	opts.Inline = map[string]string{key: src}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A script that misbehaves is Unknown with a message naming it, and never
// blocks the caller. Each case runs as the inline script of sandbox.test/Probe.
func TestLuaSandbox(t *testing.T) {
	const name = "lua health script for sandbox.test/Probe"
	tests := []struct {
		name   string
		script string
		opts   Options
		want   appspec.HealthStatus
		says   string // a part of the message
	}{
		{"infinite loop", `while true do end`, Options{}, stUnknown, ""},
		{"infinite loop swallowed by pcall", `while true do pcall(function() while true do end end) end`, Options{}, stUnknown, ""},
		{"timeout", `while true do end`, Options{MaxInstructions: 1 << 62, Timeout: 50_000_000}, stUnknown, "exceeded its time limit of 50ms"},
		{"instruction budget", `while true do end`, Options{MaxInstructions: 1000, Timeout: 1 << 40}, stUnknown, "instruction budget of 1000 instructions"},
		{"os.execute", `os.execute("touch /tmp/pwned") return {status = "Healthy"}`, Options{}, stUnknown, "os.execute is not available"},
		{"os.getenv", `return {status = "Healthy", message = os.getenv("HOME")}`, Options{}, stUnknown, "os.getenv is not available"},
		{"io.open", `local f = io.open("/etc/passwd") return {status = "Healthy"}`, Options{}, stUnknown, "io.open is not available"},
		{"require os", `local os = require("os") assert(os.difftime(os.time(), 0) > 0) return {status = "Healthy", message = os.date("!%Y", 0)}`, Options{}, stHealthy, "1970"},
		{"require os then execute", `local os = require("os") os.execute("touch /tmp/pwned") return {status = "Healthy"}`, Options{}, stUnknown, "os.execute is not available"},
		{"require os then exit", `require("os").exit(1)`, Options{}, stUnknown, "os.exit is not available"},
		{"os.remove", `os.remove("/tmp/x")`, Options{}, stUnknown, "os.remove is not available"},
		{"os.rename", `os.rename("/tmp/x", "/tmp/y")`, Options{}, stUnknown, "os.rename is not available"},
		{"os.tmpname", `return {status = os.tmpname()}`, Options{}, stUnknown, "os.tmpname is not available"},
		{"os.setenv", `os.setenv("X", "1")`, Options{}, stUnknown, "os.setenv is not available"},
		{"require io", `local io = require("io") return {status = "Healthy"}`, Options{}, stUnknown, `require("io") is not available`},
		{"require a module", `require("json")`, Options{}, stUnknown, `require("json") is not available`},
		{"dofile", `dofile("/etc/passwd")`, Options{}, stUnknown, "dofile is not available"},
		{"load", `return load("return 1")()`, Options{}, stUnknown, "load is not available"},
		{"loadstring", `return loadstring("return 1")()`, Options{}, stUnknown, "loadstring is not available"},
		{"debug library", `return {status = debug.getinfo(1).source}`, Options{}, stUnknown, ""},
		{"error", `error("boom")`, Options{}, stUnknown, "boom"},
		{"runtime error", `return {status = obj.spec.missing.field}`, Options{}, stUnknown, ""},
		{"bad status", `return {status = "Great", message = "all good"}`, Options{}, stUnknown, `invalid status "Great"`},
		{"status not a string", `return {status = 1}`, Options{}, stUnknown, "status of type number"},
		{"no return", `hs = {status = "Healthy"}`, Options{}, stUnknown, "returned nil"},
		{"returns a string", `return "Healthy"`, Options{}, stUnknown, "returned string"},
		{"message is a table", `return {status = "Degraded", message = {}}`, Options{}, stUnknown, "message of type table"},
		{"memory bomb", `local t = {} while true do t[#t+1] = string.rep('x', 1e6) end`, Options{}, stUnknown, "memory budget of 64 MiB"},
		{"one huge rep", `local s = ("x"):rep(1e12) return {status = "Healthy"}`, Options{}, stUnknown, "memory budget of 64 MiB"},
		{"concat bomb", `local s = "x" while true do s = s .. s end`, Options{MemoryLimit: 8 << 20}, stUnknown, ""},
		{"table bomb", `local t = {} while true do t[#t+1] = {1, 2, 3} end`, Options{}, stUnknown, ""},
		{"table.concat bomb", `local t = {} for i = 1, 100 do t[i] = ("x"):rep(1e6) end return {status = table.concat(t)}`, Options{}, stUnknown, "memory budget of 64 MiB"},
		{"gsub bomb", `local s = ("x"):rep(1000):gsub("x", ("y"):rep(1e6)) return {status = s}`, Options{}, stUnknown, "memory budget of 64 MiB"},
		{"gsub function bomb", `local big = ("y"):rep(1e6) local s = ("x"):rep(1000):gsub("x", function() return big end) return {status = s}`, Options{}, stUnknown, "memory budget of 64 MiB"},
		{"gsub quadratic", `local s = ("x"):rep(1e5):gsub("x", "y") return {status = s}`, Options{}, stUnknown, "too much work"},
		{"format width", `return {status = string.format("%999999d", 1)}`, Options{}, stUnknown, "invalid format"},
		{"format argument index", `return {status = string.format("%[1]s%[1]s", "x")}`, Options{}, stUnknown, "invalid format"},
		{"deep recursion", `local function f(n) return f(n + 1) + 1 end return f(1)`, Options{}, stUnknown, ""},
		{"missing status allowed", `return {status = "Missing", message = "gone"}`, Options{}, stMissing, "gone"},
		{"default message", `return {status = "Degraded"}`, Options{}, stDegraded, "Probe p is Degraded"},
		{"safe libraries", `
			local t = {}
			table.insert(t, string.upper("a"))
			table.insert(t, string.format("%02d", 7))
			assert(type(os.time()) == "number" and type(os.clock()) == "number")
			assert(os.date("!%Y", 0) == "1970")
			print("ignored")
			return {status = "Healthy", message = table.concat(t, ",")}`, Options{}, stHealthy, "A,07"},
		{"concat of numbers and chains", `local function f(a) return a .. "-" .. 1 .. "-" .. 2.5 end return {status = "Healthy", message = (f("x") .. "|") .. f("y")}`, Options{}, stHealthy, "x-1-2.5|y-1-2.5"},
		{"concat metamethod", `local t = setmetatable({}, {__concat = function(a, b) return "T" end}) return {status = "Healthy", message = "a" .. t .. "b"}`, Options{}, stHealthy, "T"},
		{"concat of nil", `return {status = "Healthy", message = "a" .. obj.spec}`, Options{}, stUnknown, "cannot perform concat operation between string and nil"},
		{"concat budget", `local s = ("x"):rep(600000) return {status = "Healthy", message = #(s .. s)}`, Options{MemoryLimit: 1 << 20}, stUnknown, "memory budget of 1 MiB"},
		{"gsub within limits", `local s, n = ("a-b-c"):gsub("-", "_") return {status = "Healthy", message = s .. n}`, Options{}, stHealthy, "a_b_c2"},
	}
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "sandbox.test/v1", "kind": "Probe", "metadata": map[string]any{"name": "p"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := inlineChecker(t, "sandbox.test/Probe", tt.script, tt.opts).Assess(probe)
			if r.Status != tt.want {
				t.Fatalf("status = %s (%q), want %s", r.Status, r.Message, tt.want)
			}
			if tt.want == stUnknown && (!strings.HasPrefix(r.Message, name+" ") || !r.ScriptError) {
				t.Errorf("message %q (script error %v) does not name the script %q", r.Message, r.ScriptError, name)
			}
			if !strings.Contains(r.Message, tt.says) {
				t.Errorf("message %q does not say %q", r.Message, tt.says)
			}
		})
	}
}

// A script that breaks a budget ends with an error naming the budget,
// having allocated not much more than it; one that raises an error is
// Unknown with the error. Each runs as the inline script of apps/Deployment.
func TestLuaBudgets(t *testing.T) {
	const script = "lua health script for apps/Deployment "
	tests := []struct {
		name   string
		source string
		opts   Options
		want   string
	}{
		{"string doubling", `local s = "x" while true do s = s .. s end`, Options{},
			script + "exceeded its memory budget of 64 MiB"},
		{"string doubling, 1 MiB", `local s = "x" while true do s = s .. s end`, Options{MemoryLimit: 1 << 20},
			script + "exceeded its memory budget of 1 MiB"},
		{"many operands in one concat", `local s = ("x"):rep(1000) while true do s = s .. s .. s .. s .. s .. s .. s .. s end`, Options{MemoryLimit: 1 << 20},
			script + "exceeded its memory budget of 1 MiB"},
		{"doubling caught by pcall", `local s = "x" while true do pcall(function() s = s .. s end) end`, Options{MemoryLimit: 1 << 20},
			script + "exceeded its memory budget of 1 MiB"},
		{"infinite loop", `while true do end`, Options{MaxInstructions: 100_000, Timeout: time.Hour},
			script + "exceeded its instruction budget of 100000 instructions"},
		{"error", `error("replicas are not ready")`, Options{},
			script + "failed: line 1: replicas are not ready"},
	}
	dep := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := inlineChecker(t, "apps/Deployment", tt.source, tt.opts)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			got := c.Assess(dep)
			runtime.ReadMemStats(&after)
			want := Result{Status: stUnknown, Message: tt.want, ScriptError: true}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			budget := int64(DefaultMemoryLimit)
			if tt.opts.MemoryLimit > 0 {
				budget = tt.opts.MemoryLimit
			}
			if allocated := after.TotalAlloc - before.TotalAlloc; allocated > uint64(3*budget) {
				t.Errorf("the run allocated %d MiB, over 3 × its budget of %d MiB", allocated>>20, budget>>20)
			}
		})
	}
}

// One Checker serves many goroutines; compiled scripts are shared.
func TestAssessConcurrent(t *testing.T) {
	c, err := New(Options{CustomizationsDir: filepath.Join("testdata", "customizations")})
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]appspec.HealthStatus{"lua-widget-ready": stHealthy, "lua-bucket-unsynced": stDegraded, "deployment-updating": stProgressing, "cr-stalled": stDegraded}
	names := slices.Sorted(maps.Keys(objs))
	fixtures := map[string]*unstructured.Unstructured{}
	for _, n := range names {
		fixtures[n] = fixture(t, n)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(names)*10)
	for range 8 {
		wg.Go(func() {
			for range 10 {
				for _, n := range names {
					if r := c.Assess(fixtures[n]); r.Status != objs[n] {
						errs <- n + ": " + string(r.Status) + " " + r.Message
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestNewErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts Options
		says string
	}{
		{"missing directory", Options{CustomizationsDir: filepath.Join(t.TempDir(), "nope")}, "no such file"},
		{"not a directory", Options{CustomizationsDir: file}, "not a directory"},
		{"empty key", Options{Inline: map[string]string{"": "return {}"}}, "want group/Kind"},
		{"two underscores", Options{Inline: map[string]string{"a_b_C": "return {}"}}, "want group/Kind"},
		{"empty group", Options{Inline: map[string]string{"/Kind": "return {}"}}, "want group/Kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("err = %v, want one saying %q", err, tt.says)
			}
		})
	}
}

func TestInlineKey(t *testing.T) {
	for in, want := range map[string]string{
		"apps/Deployment":             "apps/Deployment",
		"Pod":                         "Pod",
		"_Pod":                        "Pod",
		"cert-manager.io_Certificate": "cert-manager.io/Certificate",
		"resource.customizations.health.argoproj.io_App": "argoproj.io/App",
		"*.aws.crossplane.io/*":                          "*.aws.crossplane.io/*",
	} {
		if got, err := inlineKey(in); err != nil || got != want {
			t.Errorf("inlineKey(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"*.crossplane.io/*", "s3.aws.crossplane.io/Bucket", true},
		{"*.crossplane.io/*", "crossplane.io/Bucket", false},
		{"example.com/*", "example.com/Widget", true},
		{"*", "Pod", true},
		{"*", "apps/Deployment", true},
		{"*/Pod", "Pod", false},
		{"a*b*c", "aXXbYYc", true},
		{"a*b*c", "aXXbYY", false},
		{"", "", true},
	}
	for _, tt := range tests {
		if got := globMatch(tt.pattern, tt.s); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

// An app is as stHealthy as its worst resource, in Argo CD's order.
func TestWorseOrder(t *testing.T) {
	order := []appspec.HealthStatus{stHealthy, stSuspended, stProgressing, stMissing, stDegraded, stUnknown}
	for i, a := range order {
		for j, b := range order {
			want := order[max(i, j)]
			if got := appspec.Worse(a, b); got != want {
				t.Errorf("Worse(%s, %s) = %s, want %s", a, b, got, want)
			}
		}
	}
}

func TestCompileErrors(t *testing.T) {
	dir := t.TempDir()
	for p, src := range map[string]string{
		"example.com/Good/health.lua": `return {status = "Healthy"}`,
		"example.com/Bad/health.lua":  `return {status = `,
		"_/Wild_/health.lua":          `if then`,
	} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := New(Options{CustomizationsDir: dir, Inline: map[string]string{"Pod": "return {status = 'Healthy'}"}})
	if err != nil {
		t.Fatal(err)
	}
	err = c.CompileErrors()
	if err == nil {
		t.Fatal("no compile errors")
	}
	for _, want := range []string{"example.com/Bad/health.lua: does not compile", "_/Wild_/health.lua: does not compile"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("compile errors %q do not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "Good") {
		t.Errorf("compile errors %q name a good script", err)
	}
	good, err := New(Options{Inline: map[string]string{"Pod": "return {status = 'Healthy'}"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := good.CompileErrors(); err != nil {
		t.Errorf("compile errors of good scripts: %v", err)
	}
}
