package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
)

// requestTimeout bounds a request that does not wait for an operation.
const requestTimeout = time.Minute

// apiClient calls the REST API, with the bearer token when there is one.
type apiClient struct {
	base  string
	token string
	http  *http.Client
	// warn gets the answers' Warning headers (nil: dropped), each text
	// once: the pages of a stale list all carry the same one.
	warn   io.Writer
	warnMu sync.Mutex
	warned map[string]bool
}

// call is one request.
type call struct {
	method, path string
	query        url.Values
	body         []byte
	contentType  string
	// long requests wait for an operation (sync, rollback, delete): no
	// request timeout, the context bounds them.
	long bool
}

// apiError is an answer of 300 or more: the problem document
// (RFC 9457) when the server sent one.
type apiError struct {
	Status int    `json:"status"`
	Title  string `json:"title"`
	Detail string `json:"detail"`
	Field  string `json:"field"`
	server string
	// noHint leaves out the hint to log in (login itself failed).
	noHint bool
}

func (e *apiError) Error() string {
	var b strings.Builder
	b.WriteString(e.Title)
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	if e.Field != "" {
		b.WriteString(" (field " + e.Field + ")")
	}
	switch {
	case e.Field != "" || e.noHint:
		// A field was refused (a wrong current password), or the login
		// failed: logging in again would not help.
	case e.Status == http.StatusUnauthorized:
		fmt.Fprintf(&b, "\nhint: run `windlass login --server %s` to log in", e.server)
	case e.Status == http.StatusForbidden:
		b.WriteString("\nhint: the account or token in use may not do this; run `windlass login` as one that may")
	}
	return b.String()
}

// ExitCode is the exit code of the answer: 3 for 401 and 403, 4 for 404,
// 5 for 409, else 1.
func (e *apiError) ExitCode() int {
	switch e.Status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return cmdline.ExitUnauthorized
	case http.StatusNotFound:
		return cmdline.ExitNotFound
	case http.StatusConflict:
		return cmdline.ExitFailed
	}
	return cmdline.ExitError
}

// send does one request. An answer of 300 or more gives an *apiError,
// along with the status and the body.
func (a *apiClient) send(ctx context.Context, r call) (int, []byte, error) {
	if !r.long {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, requestTimeout)
		defer cancel()
	}
	resp, err := a.do(ctx, r, "application/json, application/problem+json")
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("%s %s: read the answer: %w", r.method, r.path, err)
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, b, a.problem(resp.StatusCode, b)
	}
	return resp.StatusCode, b, nil
}

// do sends one request that accepts accept, and prints the answer's
// warnings.
func (a *apiClient) do(ctx context.Context, r call, accept string) (*http.Response, error) {
	u := a.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, err
	}
	if r.body != nil {
		req.Header.Set("Content-Type", r.contentType)
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", "windlass-cli")
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("windlass API unreachable at %s: %w", a.base, errors.Unwrap(err))
	}
	a.printWarnings(resp.Header.Values("Warning"))
	return resp, nil
}

// stream does a GET of a text answer and copies it to w as it comes,
// until it ends or ctx does (no request timeout).
func (a *apiClient) stream(ctx context.Context, path string, q url.Values, w io.Writer) error {
	resp, err := a.do(ctx, call{method: http.MethodGet, path: path, query: q}, "text/plain, application/problem+json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return a.problem(resp.StatusCode, b)
	}
	if _, err := io.Copy(w, resp.Body); err != nil && ctx.Err() == nil {
		return fmt.Errorf("GET %s: the stream broke: %w", path, err)
	}
	return nil
}

// printWarnings prints each Warning header ("299 - \"text\"", as the
// API and the Kubernetes API server send them) as a line to warn.
func (a *apiClient) printWarnings(values []string) {
	if a.warn == nil {
		return
	}
	a.warnMu.Lock()
	defer a.warnMu.Unlock()
	for _, v := range values {
		text := v
		if _, rest, ok := strings.Cut(v, " - "); ok {
			if u, err := strconv.Unquote(rest); err == nil {
				text = u
			}
		}
		if a.warned[text] {
			continue
		}
		if a.warned == nil {
			a.warned = map[string]bool{}
		}
		a.warned[text] = true
		fmt.Fprintf(a.warn, "windlass: warning: %s\n", text)
	}
}

// problem reads an error answer.
func (a *apiClient) problem(status int, body []byte) *apiError {
	e := &apiError{}
	if json.Unmarshal(body, e) != nil || e.Title == "" {
		e = &apiError{Title: http.StatusText(status), Detail: firstLine(string(body), 200)}
	}
	e.Status, e.server = status, a.base
	return e
}

func firstLine(s string, max int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// json sends in (nil for no body) as JSON and decodes the answer into out
// (nil to skip). It returns the answer as it came.
func (a *apiClient) json(ctx context.Context, method, path string, q url.Values, in, out any) ([]byte, error) {
	r := call{method: method, path: path, query: q}
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		r.body, r.contentType = b, "application/json"
	}
	_, b, err := a.send(ctx, r)
	if err != nil {
		return b, err
	}
	if out != nil && len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return b, fmt.Errorf("%s %s: unexpected answer: %w", method, path, err)
		}
	}
	return b, nil
}

// page is one page of a list answer.
type page struct {
	Items []json.RawMessage `json:"items"`
	Next  string            `json:"next,omitempty"`
}

// list fetches the pages of a list ({items, next}) until the last, or
// until it has max items (0: no limit).
func (a *apiClient) list(ctx context.Context, path string, q url.Values, max int) ([]json.RawMessage, error) {
	q = cloneQuery(q)
	items := []json.RawMessage{}
	for {
		if max > 0 {
			q.Set("limit", fmt.Sprint(min(max-len(items), 1000)))
		}
		var p page
		if _, err := a.json(ctx, http.MethodGet, path, q, nil, &p); err != nil {
			return nil, err
		}
		items = append(items, p.Items...)
		if p.Next == "" || (max > 0 && len(items) >= max) {
			if max > 0 && len(items) > max {
				items = items[:max]
			}
			return items, nil
		}
		q.Set("cursor", p.Next)
	}
}

func cloneQuery(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// decodeItems decodes the items of a list.
func decodeItems[T any](raw []json.RawMessage) ([]T, error) {
	out := make([]T, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			return nil, fmt.Errorf("unexpected list item: %w", err)
		}
	}
	return out, nil
}

// listItems fetches a list answer and decodes its items.
func listItems[T any](ctx context.Context, a *apiClient, path string, q url.Values, max int) ([]byte, []T, error) {
	raw, err := a.list(ctx, path, q, max)
	if err != nil {
		return nil, nil, err
	}
	items, err := decodeItems[T](raw)
	if err != nil {
		return nil, nil, err
	}
	b, err := json.Marshal(raw)
	return b, items, err
}

// createFrom posts the file named by -f (a create command's body) to path
// and decodes the answer into out.
func (c *cli) createFrom(ctx context.Context, s *session, file, path string, q url.Values, out any) ([]byte, error) {
	body, ct, err := c.bodyOf(file)
	if err != nil {
		return nil, err
	}
	_, raw, err := s.api.post(ctx, path, q, body, ct, out)
	return raw, err
}

// post posts body to path and decodes the answer into out. It returns the
// answer's status and the answer as it came.
func (a *apiClient) post(ctx context.Context, path string, q url.Values, body []byte, contentType string, out any) (int, []byte, error) {
	status, raw, err := a.send(ctx, call{method: http.MethodPost, path: path, query: q, body: body, contentType: contentType})
	if err != nil {
		return status, nil, err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return status, nil, fmt.Errorf("POST %s: unexpected answer: %w", path, err)
	}
	return status, raw, nil
}

// printList gets every page of the list at path and prints it: a table of
// header and a row for each item, or -o json|yaml.
func printList[T any](ctx context.Context, f *flags, s *session, path, header string, row func(T) []string) error {
	raw, items, err := listItems[T](ctx, s.api, path, nil, 0)
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) { table(w, header, items, row) })
}

// listVerb runs a list verb without filters, such as proj list.
func listVerb[T any](ctx context.Context, c *cli, args []string, name, path, header string, row func(T) []string) error {
	f := c.flags(name, "").withOutput()
	_, s, err := f.start(args, 0)
	if err != nil {
		return err
	}
	return printList(ctx, f, s, path, header, row)
}

// contentYAML is the content type of a YAML body.
const contentYAML = "application/yaml"

// bodyOf reads the body of a create command: a file, or stdin for "-".
// The content type follows the file's extension (.yaml, .yml: YAML), or
// for stdin its first character.
func (c *cli) bodyOf(file string) ([]byte, string, error) {
	var b []byte
	var err error
	if file == "-" {
		b, err = io.ReadAll(c.stdin)
	} else {
		b, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, "", err
	}
	yamlFile := strings.HasSuffix(file, ".yaml") || strings.HasSuffix(file, ".yml")
	if file == "-" {
		yamlFile = !bytes.HasPrefix(bytes.TrimSpace(b), []byte("{"))
	}
	if yamlFile {
		return b, contentYAML, nil
	}
	return b, "application/json", nil
}
