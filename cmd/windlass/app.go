package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// runApp is the `windlass app` CLI, a client of the REST API.
func runApp(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("app", flag.ContinueOnError)
	server := fs.String("server", env("SERVER", "http://127.0.0.1:8080"), "Windlass API URL (env WINDLASS_SERVER)")
	proj := fs.String("project", "", "project of the application (default: default)")
	file := fs.String("f", "", "create: application JSON file")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return fmt.Errorf("%w: windlass app list | get NAME | sync NAME | create -f FILE", errUsage)
	}
	q := url.Values{}
	if *proj != "" {
		q.Set("project", *proj)
	}
	c := &apiClient{base: strings.TrimSuffix(*server, "/"), http: &http.Client{Timeout: 15 * time.Minute}}
	verb, rest := rest[0], rest[1:]
	needName := func() (string, error) {
		if len(rest) != 1 {
			return "", fmt.Errorf("%w: windlass app %s NAME", errUsage, verb)
		}
		return url.PathEscape(rest[0]), nil
	}
	switch verb {
	case "list":
		var list struct {
			Items []struct{ Name, Project, Sync, Health, Revision string }
		}
		if err := c.do(ctx, http.MethodGet, "/api/v1/applications?"+q.Encode(), nil, &list); err != nil {
			return err
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tPROJECT\tSYNC\tHEALTH\tREVISION")
		for _, a := range list.Items {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.Name, a.Project, a.Sync, a.Health, short(a.Revision))
		}
		return tw.Flush()
	case "get", "sync":
		name, err := needName()
		if err != nil {
			return err
		}
		method, path := http.MethodGet, "/api/v1/applications/"+name
		if verb == "sync" {
			method, path = http.MethodPost, path+"/sync"
		}
		var v json.RawMessage
		if err := c.do(ctx, method, path+"?"+q.Encode(), nil, &v); err != nil {
			return err
		}
		return printJSON(out, v)
	case "create":
		if *file == "" {
			return fmt.Errorf("%w: windlass app create -f FILE", errUsage)
		}
		body, err := os.ReadFile(*file)
		if err != nil {
			return err
		}
		var v json.RawMessage
		if err := c.do(ctx, http.MethodPost, "/api/v1/applications", body, &v); err != nil {
			return err
		}
		return printJSON(out, v)
	case "diff", "rollback", "history", "delete", "wait":
		return fmt.Errorf("windlass app %s: not implemented yet", verb)
	}
	return fmt.Errorf("%w: unknown app command %q", errUsage, verb)
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

func printJSON(out io.Writer, v json.RawMessage) error {
	var b bytes.Buffer
	if err := json.Indent(&b, v, "", "  "); err != nil {
		return err
	}
	b.WriteByte('\n')
	_, err := out.Write(b.Bytes())
	return err
}

type apiClient struct {
	base string
	http *http.Client
}

func (c *apiClient) do(ctx context.Context, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("windlass api unreachable at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var p struct {
			Title, Detail, Field string
		}
		if json.Unmarshal(b, &p) == nil && p.Title != "" {
			msg := p.Title + ": " + p.Detail
			if p.Field != "" {
				msg += " (field " + p.Field + ")"
			}
			return errors.New(msg)
		}
		return fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	return json.Unmarshal(b, out)
}
