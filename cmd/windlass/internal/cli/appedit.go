package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"sigs.k8s.io/yaml"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
	"github.com/windlass-cd/windlass/internal/appspec"
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

// specOf gets the application's spec as the server sends it, so that
// fields this client does not know survive an edit.
func specOf(ctx context.Context, s *session, t target) (map[string]any, error) {
	var view struct {
		Spec map[string]any `json:"spec"`
	}
	if _, err := s.api.json(ctx, http.MethodGet, appPath(t.name), t.q, nil, &view); err != nil {
		return nil, err
	}
	if view.Spec == nil {
		return nil, fmt.Errorf("GET %s: the answer has no spec", appPath(t.name))
	}
	if list, ok := view.Spec["sources"].([]any); ok && len(list) > 0 {
		delete(view.Spec, "source") // empty: the list replaces it
	}
	return view.Spec, nil
}

// specJSONOf is specOf as JSON, its keys sorted.
func specJSONOf(ctx context.Context, s *session, t target) ([]byte, error) {
	spec, err := specOf(ctx, s, t)
	if err != nil {
		return nil, err
	}
	return json.Marshal(spec)
}

func (c *cli) appPatch(ctx context.Context, args []string) error {
	f := c.flags("app patch", "NAME --patch JSON").withOutput()
	patch := f.String("patch", "", "the patch, JSON: a merge patch of the spec (RFC 7386), or with --type json a JSON patch (RFC 6902)")
	typ := f.String("type", "merge", "the kind of patch: merge or json")
	pos, q, s, err := f.appVerb(args, 1)
	if err != nil {
		return err
	}
	if !json.Valid([]byte(*patch)) {
		return f.usageError("--patch must be JSON")
	}
	t := target{name: pos[0], q: q}
	switch *typ {
	case "merge":
		return c.patchApp(ctx, f, s, t, json.RawMessage(*patch))
	case "json":
	default:
		return f.usageError("--type %q: want merge or json", *typ)
	}
	ops, err := jsonpatch.DecodePatch([]byte(*patch))
	if err != nil {
		return f.usageError("--patch is not a JSON patch: %v", err)
	}
	before, err := specJSONOf(ctx, s, t)
	if err != nil {
		return err
	}
	after, err := ops.Apply(before)
	if err != nil {
		return fmt.Errorf("%w: app patch: %w", cmdline.ErrUsage, err)
	}
	merge, err := jsonpatch.CreateMergePatch(before, after)
	if err != nil {
		return err
	}
	return c.patchApp(ctx, f, s, t, json.RawMessage(merge))
}

// editorOf is the command line of the user's editor.
func (c *cli) editorOf() string {
	return cmp.Or(c.getenv("WINDLASS_EDITOR"), c.getenv("VISUAL"), c.getenv("EDITOR"), "vi")
}

func (c *cli) appEdit(ctx context.Context, args []string) error {
	f := c.flags("app edit", "NAME").withOutput()
	pos, q, s, err := f.appVerb(args, 1)
	if err != nil {
		return err
	}
	t := target{name: pos[0], q: q}
	js, err := specJSONOf(ctx, s, t)
	if err != nil {
		return err
	}
	before, err := yaml.JSONToYAML(js)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp(c.getenv("TMPDIR"), "windlass-edit-")
	if err != nil {
		return err
	}
	path := filepath.Join(dir, t.name+".yaml")
	if err := os.WriteFile(path, before, 0o600); err != nil {
		return err
	}
	keep := false
	defer func() {
		if !keep {
			os.RemoveAll(dir)
		}
	}()
	editor := c.editorOf()
	cmd := exec.CommandContext(ctx, "sh", "-c", editor+` "$1"`, "sh", path)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.stdin, c.stdout, c.stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("editor %q: %v; application %s unchanged", editor, err, t.name)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if bytes.Equal(before, after) {
		fmt.Fprintf(c.stdout, "application %s: no changes\n", t.name)
		return nil
	}
	body, err := yaml.YAMLToJSON(after)
	if err == nil {
		_, _, err = s.api.send(ctx, call{method: http.MethodPut, path: appPath(t.name), query: t.q, body: body, contentType: "application/json"})
	}
	if err != nil {
		keep = true
		return fmt.Errorf("%w\nthe edited spec is kept in %s (windlass app create --upsert -f %s applies it)", err, path, path)
	}
	_, raw, err := s.api.send(ctx, call{method: http.MethodGet, path: appPath(t.name), query: t.q})
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) { fmt.Fprintf(w, "application %s updated\n", t.name) })
}

// sourcesOf are the sources of spec as the server sent them: its list, or
// its one source.
func sourcesOf(spec map[string]any) []any {
	if list, ok := spec["sources"].([]any); ok && len(list) > 0 {
		return list
	}
	if src, ok := spec["source"]; ok && src != nil {
		return []any{src}
	}
	return nil
}

func (c *cli) appAddSource(ctx context.Context, args []string) error {
	f := c.flags("app add-source", "NAME --repo URL").withOutput()
	var src appspec.Source
	f.sourceFlags(&src)
	f.StringVar(&src.Ref, "ref", "", "a name for $ref/... in the other sources' Helm values files")
	f.StringVar(&src.Name, "source-name", "", "the source's name, unique in the application")
	position := f.Int("source-position", 0, "where to add it, from 1 (default: last)")
	pos, q, s, err := f.appVerb(args, 1)
	if err != nil {
		return err
	}
	if src.RepoURL == "" {
		return f.usageError("--repo is required")
	}
	t := target{name: pos[0], q: q}
	spec, err := specOf(ctx, s, t)
	if err != nil {
		return err
	}
	sources := sourcesOf(spec)
	at := len(sources)
	if f.set("source-position") {
		if *position < 1 || *position > len(sources)+1 {
			return f.usageError("--source-position %d: want 1 to %d", *position, len(sources)+1)
		}
		at = *position - 1
	}
	sources = slices.Insert(sources, at, any(src))
	return c.patchApp(ctx, f, s, t, map[string]any{"source": nil, "sources": sources})
}

func (c *cli) appRemoveSource(ctx context.Context, args []string) error {
	f := c.flags("app remove-source", "NAME --source-position N").withOutput()
	position := f.Int("source-position", 0, "the source to remove, from 1")
	pos, q, s, err := f.appVerb(args, 1)
	if err != nil {
		return err
	}
	if !f.set("source-position") {
		return f.usageError("--source-position is required")
	}
	t := target{name: pos[0], q: q}
	spec, err := specOf(ctx, s, t)
	if err != nil {
		return err
	}
	sources := sourcesOf(spec)
	switch {
	case len(sources) < 2:
		return fmt.Errorf("%w: app remove-source: %s has %s; an application needs one", cmdline.ErrUsage, t.name, plural(len(sources), "source"))
	case *position < 1 || *position > len(sources):
		return f.usageError("--source-position %d: %s has %d sources", *position, t.name, len(sources))
	}
	return c.patchApp(ctx, f, s, t, map[string]any{"sources": slices.Delete(sources, *position-1, *position)})
}
