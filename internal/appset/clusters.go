package appset

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/settings"
)

// clusters yields the registered clusters the selector matches, in name
// order. Without a selector the built-in in-cluster is one of them.
func (ev *evaluation) clusters(ctx context.Context, c *ClustersGenerator) ([]Params, error) {
	if c.FlatList {
		return nil, invalid("clusters.flatList", "not implemented by Windlass")
	}
	if ev.g.clusters == nil {
		return nil, fmt.Errorf("%w: clusters generator: no cluster registry is configured", ErrUnavailable)
	}
	list, err := ev.g.clusters.Clusters(ctx)
	if err != nil {
		return nil, fmt.Errorf("clusters generator: %w", err)
	}
	if c.Selector.empty() {
		list = append(list, settings.Cluster{Name: appspec.InClusterName, Server: appspec.InClusterServer})
	}
	slices.SortFunc(list, func(a, b settings.Cluster) int { return strings.Compare(a.Name, b.Name) })
	var out []Params
	for _, cl := range list {
		ok, err := c.Selector.matches(cl.Labels)
		if err != nil {
			return nil, fmt.Errorf("clusters.selector: %w", err)
		}
		if !ok {
			continue
		}
		labels := map[string]any{}
		for k, v := range cl.Labels {
			labels[k] = v
		}
		p := Params{
			"name": cl.Name, "nameNormalized": normalize(cl.Name), "server": cl.Server, "project": "",
			"metadata": map[string]any{"labels": labels, "annotations": map[string]any{}},
		}
		if p, err = p.withValues(stringValues(c.Values), ev.r); err != nil {
			return nil, fmt.Errorf("clusters generator: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

func stringValues(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
