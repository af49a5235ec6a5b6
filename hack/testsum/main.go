// Command testsum reads `go test -json` on stdin, prints each package's
// result, the output of every failed test, and a closing line
// "N passed, N failed, N skipped". It exits 1 when a test or a build failed,
// or when no test ran.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action     string
	ImportPath string
	Package    string
	Test       string
	Output     string
	Elapsed    float64
}

type counts struct{ passed, failed, skipped int }

func main() { os.Exit(run(os.Stdin, os.Stdout)) }

func run(in io.Reader, out io.Writer) int {
	var (
		total   counts
		outputs = map[string]*strings.Builder{}
		failed  []string
		pkgs    = map[string]string{}
		pkgTime = map[string]float64{}
		badPkg  bool
	)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			fmt.Fprintln(out, string(line)) // build errors are plain text
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "build-output":
			fmt.Fprint(out, e.Output) // compiler errors, printed as they come
		case "build-fail":
			badPkg = true
		case "output":
			b, ok := outputs[key]
			if !ok {
				b = &strings.Builder{}
				outputs[key] = b
			}
			if b.Len() < 256<<10 {
				b.WriteString(e.Output)
			}
		case "pass", "fail", "skip":
			if e.Test == "" {
				pkgs[e.Package], pkgTime[e.Package] = e.Action, e.Elapsed
				if e.Action == "fail" {
					badPkg = true
					failed = append(failed, key)
				}
				continue
			}
			switch e.Action {
			case "pass":
				total.passed++
				delete(outputs, key)
			case "fail":
				total.failed++
				failed = append(failed, key)
			case "skip":
				total.skipped++
			}
		}
	}
	names := make([]string, 0, len(pkgs))
	for p := range pkgs {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		fmt.Fprintf(out, "%-4s %-60s %6.1fs\n", pkgs[p], p, pkgTime[p])
	}
	for _, k := range failed {
		if b, ok := outputs[k]; ok {
			fmt.Fprintf(out, "\n=== output of failed %s\n%s", k, b.String())
		}
	}
	fmt.Fprintf(out, "\n%d passed, %d failed, %d skipped\n", total.passed, total.failed, total.skipped)
	if total.failed > 0 || badPkg || total.passed == 0 {
		return 1
	}
	return 0
}
