package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

func (c *cli) appUnset(ctx context.Context, args []string) error {
	f := c.flags("app unset", "NAME").withOutput()
	position := f.Int("source-position", 0, "the source to change, from 1, of a multi-source application")
	params := f.withUnsetParams()
	pos, q, s, err := f.appVerb(args, 1)
	if err != nil {
		return err
	}
	if len(params.edits) == 0 {
		return f.usageError("nothing to unset")
	}
	patch := map[string]any{}
	if err := c.patchSource(ctx, s, pos[0], q, *position, nil, params, patch); err != nil {
		return err
	}
	return c.patchApp(ctx, f, s, target{name: pos[0], q: q}, patch)
}

// patchApp sends a JSON merge patch of the application's spec and prints
// the answer.
func (c *cli) patchApp(ctx context.Context, f *flags, s *session, t target, patch any) error {
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, raw, err := s.api.send(ctx, call{method: http.MethodPatch, path: appPath(t.name), query: t.q, body: body, contentType: "application/merge-patch+json"})
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) { fmt.Fprintf(w, "application %s updated\n", t.name) })
}
