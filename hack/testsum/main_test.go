package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		wantCode int
		wantLine string
	}{
		{"all pass", `{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"skip","Package":"p","Test":"TestB"}
{"Action":"pass","Package":"p"}`, 0, "1 passed, 0 failed, 1 skipped"},
		{"a failure shows its output", `{"Action":"output","Package":"p","Test":"TestA","Output":"boom\n"}
{"Action":"fail","Package":"p","Test":"TestA"}
{"Action":"fail","Package":"p"}`, 1, "0 passed, 1 failed, 0 skipped"},
		{"build failure", `# p
p/x.go:1: syntax error
{"Action":"fail","Package":"p"}`, 1, "0 passed, 0 failed, 0 skipped"},
		{"json build failure shows the compiler error", `{"ImportPath":"p [p.test]","Action":"build-output","Output":"p/x_test.go:3:1: undefined: Foo\n"}
{"ImportPath":"p [p.test]","Action":"build-fail"}
{"Action":"pass","Package":"q","Test":"TestA"}
{"Action":"fail","Package":"p"}`, 1, "undefined: Foo"},
		{"no tests", ``, 1, "0 passed, 0 failed, 0 skipped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if code := run(strings.NewReader(tt.in), &out); code != tt.wantCode {
				t.Fatalf("exit code = %d, want %d; output:\n%s", code, tt.wantCode, out.String())
			}
			if !strings.Contains(out.String(), tt.wantLine+"\n") {
				t.Fatalf("output lacks %q:\n%s", tt.wantLine, out.String())
			}
			if tt.name == "a failure shows its output" && !strings.Contains(out.String(), "boom") {
				t.Fatalf("failed test output missing:\n%s", out.String())
			}
		})
	}
}
