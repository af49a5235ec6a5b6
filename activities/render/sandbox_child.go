package render

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/failure"
)

// sandboxCPUExit is a sandbox's exit code when a render used up its CPU
// time.
const sandboxCPUExit = 3

// maxRequestBytes bounds a request frame (a render request and its
// checkout paths).
const maxRequestBytes = 16 << 20

// SandboxMain serves renders read from in, answering on out, until in
// closes, and returns the process's exit code. The windlass binary runs it
// when SandboxEnv is set: it renders with the checkouts the worker made,
// under the request's limits, and reads no credentials.
func SandboxMain(in io.Reader, out io.Writer) int {
	r := bufio.NewReader(in)
	onCPULimit(func() { os.Exit(sandboxCPUExit) })
	limited := false
	for {
		var req sandboxRequest
		if err := readFrame(r, maxRequestBytes, &req); err != nil {
			if errors.Is(err, io.EOF) {
				return 0
			}
			fmt.Fprintln(os.Stderr, "render sandbox:", err)
			return 1
		}
		if !limited {
			limitMemory(req.Limits.MemoryBytes)
			debug.SetMemoryLimit(req.Limits.MemoryBytes / 4 * 3)
			debug.SetMaxStack(req.Limits.StackBytes)
			limited = true
		}
		limitCPU(req.Limits.CPU)
		if err := writeFrame(out, serveRender(req)); err != nil {
			fmt.Fprintln(os.Stderr, "render sandbox:", err)
			return 1
		}
	}
}

// serveRender renders one request in this process.
func serveRender(req sandboxRequest) sandboxResponse {
	var t timings
	r := &Renderer{git: checkedOut(req.Roots), cacheDir: req.CacheDir, plugins: req.Plugins, maxFile: req.MaxFileBytes, netTimeout: req.NetTimeout, kustomize: req.Kustomize,
		log: slog.New(slog.DiscardHandler), metrics: &t}
	var err error
	if req.PluginServer != "" {
		r.pluginServer, err = NewPluginClient(req.PluginServer)
	}
	var objs []*unstructured.Unstructured
	var b []byte
	var shared bool
	if err == nil {
		objs, b, shared, err = r.renderLocal(context.Background(), req.Request)
	}
	if err == nil && int64(len(b)) > req.Limits.OutputBytes {
		err = fmt.Errorf("%w: the rendered manifests (%s) are larger than the output limit of %s", ErrRenderLimit,
			bytesText(int64(len(b))), bytesText(req.Limits.OutputBytes))
	}
	if err != nil {
		return sandboxResponse{Error: capError(err).Error(), ErrorType: failure.TypeOf(err), Rendered: t}
	}
	return sandboxResponse{Manifests: b, Count: len(objs), Shared: shared, Rendered: t}
}

// checkedOut answers checkouts from the ones the worker made.
type checkedOut map[string]string

func (c checkedOut) Checkout(_ context.Context, repoURL, sha string) (string, error) {
	if root, ok := c[rootKey(repoURL, sha)]; ok {
		return root, nil
	}
	return "", fmt.Errorf("render sandbox: %s at %s was not checked out", repoURL, sha)
}
