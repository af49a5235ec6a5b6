package api

import (
	"net/http"
	"testing"
	"time"

	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// TestClusterConnectionTimeout: the connection test of a cluster that
// accepts and never completes the TLS handshake, that stalls after it, or
// that stalls after its headers, fails with a timeout.
func TestClusterConnectionTimeout(t *testing.T) {
	silent := testbed.SilentListener(t)
	afterHandshake := testbed.StallingServer(t, testbed.Stall{TLS: true})
	afterHeaders := testbed.StallingServer(t, testbed.Stall{TLS: true, Headers: true, ContentType: "application/json"})
	en := newEnv(t, func(o *Options) { o.ClusterCheck, o.ClusterTimeout = nil, 200*time.Millisecond })
	var steps []step
	for _, cl := range []settings.Cluster{
		{Name: "no-handshake", Server: "https://" + silent},
		{Name: "after-handshake", Server: afterHandshake.URL, Insecure: true},
		{Name: "after-headers", Server: afterHeaders.URL, Insecure: true},
	} {
		steps = append(steps, step{name: cl.Name, req: request{method: http.MethodPost, path: "/api/v1/clusters", body: jsonBody(t, cl)},
			status: http.StatusUnprocessableEntity, field: "server", detail: "timed out after 200ms"})
	}
	runSteps(t, en, steps)
}
