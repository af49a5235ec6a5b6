package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
)

// runProbe is `windlass probe [--timeout D] URL`: a GET that exits 0 on a
// 2xx answer, for container health checks in an image without a shell or
// curl (docker compose's healthcheck: ["CMD", "windlass", "probe", URL]).
func runProbe(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	if err := fs.Parse(args); err != nil {
		return cmdline.ErrUsage
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: windlass probe [--timeout 3s] URL")
		return cmdline.ErrUsage
	}
	url := fs.Arg(0)
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("probe %s: %w", url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("probe %s: %w: %s", url, errProbeFailed, resp.Status)
	}
	return nil
}

var errProbeFailed = errors.New("not healthy")
