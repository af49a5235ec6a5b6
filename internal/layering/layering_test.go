// Package layering holds the test of the import rule between Windlass's
// layers: cmd → api | worker → workflows → activities → internal.
package layering

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/windlass-cd/windlass"

// layers ranks each top-level directory: a package may import packages of
// a lower rank, and packages of its own directory. api and worker share a
// rank and may not import each other. test/ and hack/ are tools and tests,
// outside the rule.
var layers = map[string]int{
	"internal": 0, "web": 0,
	"activities": 1,
	"workflows":  2,
	"api":        3, "worker": 3,
	"cmd": 4,
}

// allowed says whether a package in top-level directory from may import
// one in to.
func allowed(from, to string) bool {
	rf, okf := layers[from]
	rt, okt := layers[to]
	if !okf || !okt {
		return true
	}
	return rt < rf || from == to
}

func TestAllowed(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		want     bool
	}{
		{"cmd", "api", true}, {"api", "workflows", true}, {"worker", "activities", true},
		{"workflows", "activities", true}, {"activities", "internal", true}, {"activities", "activities", true},
		{"internal", "activities", false}, {"activities", "workflows", false}, {"workflows", "api", false},
		{"api", "worker", false}, {"worker", "api", false}, {"api", "cmd", false},
		{"test", "cmd", true}, {"internal", "test", true},
	} {
		if got := allowed(tc.from, tc.to); got != tc.want {
			t.Errorf("allowed(%s, %s) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

// TestLayers fails when a package's non-test imports break the rule.
func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		pkg, ok := top(fields[0])
		if !ok {
			continue
		}
		pkgs++
		for _, imp := range fields[1:] {
			if dir, ok := top(imp); ok && !allowed(pkg, dir) {
				t.Errorf("%s imports %s: %s may not import %s (cmd → api | worker → workflows → activities → internal)",
					strings.TrimPrefix(fields[0], module+"/"), strings.TrimPrefix(imp, module+"/"), pkg, dir)
			}
		}
	}
	if pkgs < 20 {
		t.Fatalf("go list found %d packages of the module", pkgs)
	}
}

// top is the top-level directory of a package of this module.
func top(pkg string) (string, bool) {
	rest, ok := strings.CutPrefix(pkg, module+"/")
	if !ok {
		return "", false
	}
	dir, _, _ := strings.Cut(rest, "/")
	return dir, true
}
