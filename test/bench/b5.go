package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// benchLine matches a `go test -bench` result line of BenchmarkRender.
var benchLine = regexp.MustCompile(`^BenchmarkRender/([^/\s]+)/([^\s]+?)(-\d+)?\s+\d+\s+([0-9.]+) ns/op`)

// benchRender is B5: activities/render's BenchmarkRender (cache hit, cold
// checkout, warm mirror, warm tree per tool), three counts of one second
// each, reported as the median ns/op in milliseconds. redisAddr is the
// Redis to store into ("" lets the benchmark start its own).
func benchRender(ctx context.Context, res *results, pkg, redisAddr string) error {
	cmd := exec.CommandContext(ctx, "go", "test", "-p", "1", "-run", "^$", "-bench", "^BenchmarkRender$",
		"-benchtime", "1s", "-count", "3", "-timeout", "20m", pkg)
	cmd.Env = os.Environ()
	if redisAddr != "" {
		cmd.Env = append(cmd.Env, "WINDLASS_TEST_REDIS_ADDR="+redisAddr)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go test -bench BenchmarkRender %s: %w\n%s", pkg, err, out.String())
	}
	runs := map[string][]float64{}
	var order []string
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ns, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			continue
		}
		id := "B5." + m[1] + "." + m[2]
		if _, ok := runs[id]; !ok {
			order = append(order, id)
		}
		runs[id] = append(runs[id], ns/1e6)
	}
	if len(order) == 0 {
		return fmt.Errorf("no BenchmarkRender results in the output:\n%s", out.String())
	}
	for _, id := range order {
		res.addRun(id, map[string]any{"milliseconds": runs[id]})
		res.emit(id, median(runs[id]), "ms", len(runs[id]))
	}
	if !slices.ContainsFunc(order, func(id string) bool { return strings.Contains(id, "300") }) {
		res.note("B5 renders the fixtures of activities/render (directory, helm, kustomize, jsonnet); the issue's guestbook set and a 300-object Helm chart are not there yet")
	}
	return nil
}
