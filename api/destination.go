package api

import (
	"context"
	"errors"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/settings"
)

// resolveDestination returns d with the server of the registered cluster
// its name stands for (Argo CD's destination.name). An unknown name is a
// problem with status, naming the field.
func (s *Server) resolveDestination(ctx context.Context, d appspec.Destination, status int) (appspec.Destination, error) {
	out, err := s.opts.Settings.ResolveDestination(ctx, d)
	if errors.Is(err, settings.ErrNotFound) {
		pr := problem(status, "destination.name: "+err.Error())
		pr.Field = "destination.name"
		return d, pr
	}
	return out, err
}
