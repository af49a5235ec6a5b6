package dexserver

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// localTransport serves the requests for the issuer's URLs with h, in
// this process, and sends the others to next.
type localTransport struct {
	issuer *url.URL
	h      http.Handler
	next   http.RoundTripper
}

// local reports whether u is one of the issuer's URLs.
func (t *localTransport) local(u *url.URL) bool {
	prefix := strings.TrimRight(t.issuer.Path, "/")
	return u.Scheme == t.issuer.Scheme && u.Host == t.issuer.Host &&
		(u.Path == prefix || strings.HasPrefix(u.Path, prefix+"/"))
}

// RoundTrip implements http.RoundTripper.
func (t *localTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !t.local(r.URL) {
		return t.next.RoundTrip(r)
	}
	in := r.Clone(r.Context())
	if in.Body == nil {
		in.Body = http.NoBody
	}
	defer in.Body.Close()
	in.RequestURI = r.URL.RequestURI()
	in.RemoteAddr = "127.0.0.1:0"
	in.Host = r.URL.Host
	rec := &recorder{header: http.Header{}}
	t.h.ServeHTTP(rec, in)
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	body := rec.body.Bytes()
	return &http.Response{
		Status:     strconv.Itoa(status) + " " + http.StatusText(status),
		StatusCode: status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: rec.header, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		Request: r,
	}, nil
}

// recorder is the http.ResponseWriter of an in-process request.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}
