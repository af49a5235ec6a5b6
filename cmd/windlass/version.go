package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
	"github.com/windlass-cd/windlass/internal/version"
)

// runVersion prints this binary's version: one line, or JSON with -o json.
func runVersion(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	output := fs.String("o", "", "output format: json (default: one line)")
	if err := fs.Parse(args); err != nil {
		return cmdline.ErrUsage
	}
	info := version.Get()
	switch *output {
	case "":
		_, err := fmt.Fprintln(stdout, info)
		return err
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	}
	return fmt.Errorf("%w: -o must be json", cmdline.ErrUsage)
}
