package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"sigs.k8s.io/yaml"
)

// printObject prints a Kubernetes object as YAML, or as -o says.
func (f *flags) printObject(raw []byte) error {
	y, err := yaml.JSONToYAML(raw)
	if err != nil {
		return fmt.Errorf("the answer is not an object: %w", err)
	}
	return f.print(raw, func(w io.Writer) { _, _ = w.Write(y) })
}

func (c *cli) appLogs(ctx context.Context, args []string) error {
	f := c.flags("app logs", "NAME")
	r := f.withResource()
	f.StringVar(r.name, "name", "", "the same as --resource-name, as argocd app logs spells it")
	container := f.String("container", "", "the container (default: the pod's first)")
	follow := f.Bool("f", false, "follow the logs")
	f.BoolVar(follow, "follow", false, "the same as -f")
	tail := f.Int64("tail", -1, "only the last N lines of each pod; -1: all")
	since := f.Int64("since-seconds", 0, "only the lines of the last N seconds")
	previous := f.Bool("previous", false, "the logs of the previous instance of the container")
	filter := f.String("filter", "", "only the lines that contain this text; with a leading !, those that do not")
	pos, q, s, err := f.appVerb(args, 1)
	if err != nil {
		return err
	}
	// No resource: all the app's pods, as argocd app logs does; a name
	// alone: a pod.
	if *r.kind != "" || *r.name != "" || *r.group != "" || *r.namespace != "" {
		if *r.kind == "" {
			*r.kind = "Pod"
		}
		if err := r.query(f, q); err != nil {
			return err
		}
	}
	for k, v := range map[string]string{"container": *container, "filter": *filter} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if *follow {
		q.Set("follow", "true")
	}
	if *previous {
		q.Set("previous", "true")
	}
	if *tail >= 0 {
		q.Set("tailLines", strconv.FormatInt(*tail, 10))
	}
	if *since > 0 {
		q.Set("sinceSeconds", strconv.FormatInt(*since, 10))
	}
	return s.api.stream(ctx, appPath(pos[0])+"/logs", q, c.stdout)
}

func (c *cli) appGetResource(ctx context.Context, args []string) error {
	f := c.flags("app get-resource", "NAME").withOutput()
	r := f.withResource()
	pos, q, s, err := f.appVerb(args, 1)
	if err != nil {
		return err
	}
	if err := r.query(f, q); err != nil {
		return err
	}
	raw, err := s.api.json(ctx, http.MethodGet, appPath(pos[0])+"/resource", q, nil, nil)
	if err != nil {
		return err
	}
	return f.printObject(raw)
}

func (c *cli) appPatchResource(ctx context.Context, args []string) error {
	f := c.flags("app patch-resource", "NAME").withOutput()
	r := f.withResource()
	patch := f.String("patch", "", "the patch, JSON (required)")
	patchType := f.String("patch-type", "merge", "merge, strategic or json (or their media types, as Argo CD's application/merge-patch+json)")
	pos, q, s, err := f.appVerb(args, 1)
	if err != nil {
		return err
	}
	if err := r.query(f, q); err != nil {
		return err
	}
	if *patch == "" {
		return f.usageError("--patch is required")
	}
	q.Set("patchType", *patchType)
	_, raw, err := s.api.send(ctx, call{method: http.MethodPatch, path: appPath(pos[0]) + "/resource", query: q,
		body: []byte(*patch), contentType: "application/json"})
	if err != nil {
		return err
	}
	if f.output != nil && *f.output != "" {
		return f.printObject(raw)
	}
	fmt.Fprintf(c.stdout, "application %s: %s %s patched\n", pos[0], *r.kind, *r.name)
	return nil
}

func (c *cli) appDeleteResource(ctx context.Context, args []string) error {
	f := c.flags("app delete-resource", "NAME")
	r := f.withResource()
	force := f.Bool("force", false, "delete at once, with a grace period of zero")
	orphan := f.Bool("orphan", false, "leave the resource's dependents")
	pos, q, s, err := f.appVerb(args, 1)
	if err != nil {
		return err
	}
	if err := r.query(f, q); err != nil {
		return err
	}
	if *force {
		q.Set("force", "true")
	}
	if *orphan {
		q.Set("orphan", "true")
	}
	if _, err := s.api.json(ctx, http.MethodDelete, appPath(pos[0])+"/resource", q, nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "application %s: %s %s deleted\n", pos[0], *r.kind, *r.name)
	return nil
}
