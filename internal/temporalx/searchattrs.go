package temporalx

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// EnsureSearchAttributes adds the custom search attributes the namespace
// lacks, through the operator service, and returns the names it added. One
// that exists with another type is an error; one another process added
// meanwhile is not.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string, want map[string]enums.IndexedValueType) ([]string, error) {
	if len(want) == 0 {
		return nil, nil
	}
	op := c.OperatorService()
	list, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("list search attributes: %w", err)
	}
	have := list.GetCustomAttributes()
	missing := make(map[string]enums.IndexedValueType)
	for name, typ := range want {
		got, ok := have[name]
		switch {
		case !ok:
			missing[name] = typ
		case got != typ:
			return nil, fmt.Errorf("search attribute %q exists with type %s, want %s", name, got, typ)
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}
	_, err = op.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: missing})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return nil, fmt.Errorf("add search attributes: %w", err)
	}
	return slices.Sorted(maps.Keys(missing)), nil
}
