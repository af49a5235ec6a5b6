package notify

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/windlass-cd/windlass/internal/notifications"
)

// message is a rendered notification ready for a service.
type message struct {
	d      notifications.Delivery
	app    notifications.App
	t      notifications.Template
	secret map[string][]byte
}

// expand resolves a service field's references.
func (m message) expand(v string) (string, error) { return notifications.Expand(v, m.secret) }

// sendError is a failed send; permanent ones are not retried.
type sendError struct {
	permanent bool
	err       error
}

func (e *sendError) Error() string { return e.err.Error() }
func (e *sendError) Unwrap() error { return e.err }

func permanent(format string, args ...any) error {
	return &sendError{permanent: true, err: fmt.Errorf(format, args...)}
}

// IsPermanent reports whether retrying err cannot help.
func IsPermanent(err error) bool {
	var se *sendError
	return errors.As(err, &se) && se.permanent
}

// httpDo sends a request and reads a bounded response. 5xx, 429 and
// transport errors are retryable; other non-2xx statuses are permanent.
func httpDo(ctx context.Context, c *http.Client, method, url string, body []byte, hdr http.Header) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, permanent("request %s: %w", redactURL(url), err)
	}
	req.Header = hdr
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, redactURL(url), scrub(err, url))
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return out, nil
	}
	err = fmt.Errorf("%s %s: %s: %s", method, redactURL(url), resp.Status, firstLine(out))
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		return nil, err
	}
	return nil, &sendError{permanent: true, err: err}
}

// redactURL keeps the scheme and host of a URL: webhook URLs (Slack,
// Teams) carry their credential in the path or the query.
func redactURL(u string) string {
	pu, err := url.Parse(u)
	if err != nil || pu.Host == "" {
		return "(invalid URL)"
	}
	return pu.Scheme + "://" + pu.Host + "/…"
}

// scrub removes a secret URL from a transport error's text.
func scrub(err error, url string) error {
	return errors.New(strings.ReplaceAll(err.Error(), url, redactURL(url)))
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

func jsonHeader() http.Header {
	return http.Header{"Content-Type": {"application/json"}}
}

func client(base *http.Client, insecure bool) *http.Client {
	if !insecure {
		return base
	}
	c := *base
	tr, _ := http.DefaultTransport.(*http.Transport)
	tr = tr.Clone()
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the service's own setting
	c.Transport = tr
	return &c
}

// rawJSON parses a template field that holds JSON (Slack attachments,
// Teams facts); "" is absent.
func rawJSON(field, v string) (json.RawMessage, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	if !json.Valid([]byte(v)) {
		return nil, permanent("template field %s is not valid JSON", field)
	}
	return json.RawMessage(v), nil
}
