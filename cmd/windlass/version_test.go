package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
	"github.com/windlass-cd/windlass/internal/version"
)

func TestVersionCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if err := runVersion(nil, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "windlass "+version.Version) {
		t.Fatalf("version printed %q", out.String())
	}
	out.Reset()
	if err := runVersion([]string{"-o", "json"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	var info version.Info
	if err := json.Unmarshal(out.Bytes(), &info); err != nil || info.Version != version.Version {
		t.Fatalf("version -o json printed %q: %v", out.String(), err)
	}
	if err := runVersion([]string{"-o", "yaml"}, &out, &errb); !errors.Is(err, cmdline.ErrUsage) {
		t.Fatalf("version -o yaml: %v, want a usage error", err)
	}
}
