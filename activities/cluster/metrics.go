package cluster

// Metrics records the cluster activities' measurements. *metrics.Metrics
// is one.
type Metrics interface {
	// ApplyRequest counts an apply request (server-side apply, replace or
	// create) sent to a cluster, dry run or not.
	ApplyRequest(dryRun bool)
}

// WithMetrics records measurements into m (default: none).
func WithMetrics(m Metrics) Option {
	return func(a *Activities) { a.metrics = m }
}

func (a *Activities) applyRequest(dryRun bool) {
	if a.metrics != nil {
		a.metrics.ApplyRequest(dryRun)
	}
}
