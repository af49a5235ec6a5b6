package render

import (
	"time"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// Metrics records the renderer's measurements. *metrics.Metrics is one.
type Metrics interface {
	// CacheRequest counts a manifest cache read, hit or miss.
	CacheRequest(hit bool)
	// Rendered records how long tool took to render one source.
	Rendered(tool string, d time.Duration)
}

func (r *Renderer) cacheRequest(hit bool) {
	if r.metrics != nil {
		r.metrics.CacheRequest(hit)
	}
}

// timeRender records the time since start as a render by tool; a tool
// name that is none of the known ones (a bad request) is "unknown", so that
// requests cannot grow the label set.
func (r *Renderer) timeRender(tool string, start time.Time) {
	if r.metrics == nil {
		return
	}
	switch tool {
	case appspec.ToolDirectory, appspec.ToolHelm, appspec.ToolKustomize, appspec.ToolJsonnet, appspec.ToolPlugin:
	default:
		tool = "unknown"
	}
	r.metrics.Rendered(tool, time.Since(start))
}
