package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
	"github.com/windlass-cd/windlass/internal/customizations"
	"github.com/windlass-cd/windlass/internal/health"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// runHealth is `windlass health`: it assesses one object from a file with the
// checks and limits the worker uses, and prints {"status": ..., "message":
// ...}, with "scriptError": true when a Lua script failed. Any status,
// Degraded included, is a success; unreadable or invalid input is not.
func runHealth(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("health", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("customizations", "", "directory of Lua health scripts: <group>/<Kind>/health.lua, <Kind>/health.lua for the core group")
	argocdCM := fs.String("argocd-cm", "", "argocd-cm ConfigMap (or its data) whose resource.customizations.health keys win over the directory's scripts")
	file := fs.String("object", "", "YAML or JSON file holding one Kubernetes object (- for stdin)")
	timeout := fs.Duration("timeout", 0, "time limit of one Lua health script (default 1s)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: windlass health [--customizations DIR] [--argocd-cm FILE] --object FILE")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return cmdline.ErrUsage
	}
	if *file == "" || fs.NArg() > 0 {
		fs.Usage()
		return cmdline.ErrUsage
	}
	data, err := readObjectFile(*file, stdin)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	objs, err := manifest.ParseUnnamed(*file, data)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	if len(objs) != 1 {
		return fmt.Errorf("health: %s holds %d objects, want exactly one", *file, len(objs))
	}
	if objs[0].GetKind() == "" || objs[0].GetAPIVersion() == "" {
		return fmt.Errorf("health: %s: the object needs apiVersion and kind", *file)
	}
	opts := health.Options{CustomizationsDir: *dir, Timeout: *timeout}
	if *argocdCM != "" {
		cm, err := customizations.LoadConfigMap(*argocdCM)
		if err != nil {
			return fmt.Errorf("health: %w", err)
		}
		opts.Inline = cm.Health
	}
	checker, err := health.New(opts)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	return json.NewEncoder(stdout).Encode(checker.Assess(objs[0]))
}

func readObjectFile(name string, stdin io.Reader) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(io.LimitReader(stdin, manifest.MaxFileBytes+1))
	}
	return os.ReadFile(name)
}
