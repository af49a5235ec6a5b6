package api

import (
	"bytes"
	"compress/gzip"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/labstack/echo/v5"
)

// uiFS is a built UI as Vite lays it out.
var uiFS = fstest.MapFS{
	"index.html":              {Data: []byte(`<!doctype html><html><head><script type="module" src="/assets/index-abc123.js"></script></head><body><div id="root"></div></body></html>`)},
	"assets/index-abc123.js":  {Data: []byte(strings.Repeat("console.log('windlass');\n", 100))},
	"assets/index-def456.css": {Data: []byte("body{margin:0}")},
	"favicon.svg":             {Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`)},
	"build-info.json":         {Data: []byte(`{"sourceHash":"x"}`)},
}

// uiServer serves uiFS as the API does, without the API.
func uiServer(t *testing.T) *httptest.Server {
	t.Helper()
	u, err := loadUI(uiFS)
	if err != nil {
		t.Fatal(err)
	}
	e := echo.NewWithConfig(echo.Config{HTTPErrorHandler: errorHandler(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	for _, r := range append(slices.Clone(uiPages), uiFiles...) {
		e.GET(r, u.serve)
	}
	hs := httptest.NewServer(e)
	t.Cleanup(hs.Close)
	return hs
}

func TestUIServing(t *testing.T) {
	hs := uiServer(t)
	index := string(uiFS["index.html"].Data)
	for _, tc := range []struct {
		name, path string
		header     map[string]string
		status     int
		body       string // a substring, "" for any
		cache      string
		ctype      string
		gzip       bool
	}{
		{name: "root", path: "/", status: 200, body: index, cache: cacheRevalid, ctype: "text/html"},
		{name: "client route falls back to index.html", path: "/applications/default/guestbook?tab=history", status: 200, body: index, cache: cacheRevalid, ctype: "text/html"},
		{name: "app names may hold dots", path: "/applications/default/web.v2", status: 200, body: index, cache: cacheRevalid, ctype: "text/html"},
		{name: "hashed asset is immutable", path: "/assets/index-def456.css", status: 200, body: "body{margin:0}", cache: cacheImmutable, ctype: "text/css"},
		{name: "gzip when accepted", path: "/assets/index-abc123.js", header: map[string]string{"Accept-Encoding": "gzip, br"},
			status: 200, body: "console.log", cache: cacheImmutable, ctype: "text/javascript", gzip: true},
		{name: "no gzip when refused", path: "/assets/index-abc123.js", header: map[string]string{"Accept-Encoding": "gzip;q=0"},
			status: 200, body: "console.log", cache: cacheImmutable, ctype: "text/javascript"},
		{name: "unhashed root file revalidates", path: "/favicon.svg", status: 200, body: "<svg", cache: cacheRevalid, ctype: "image/svg+xml"},
		{name: "missing asset is a 404, not index.html", path: "/assets/index-gone.js", status: 404, body: "no such file"},
		{name: "dot segments stay inside the files", path: "/assets/../../favicon.svg", status: 200, body: "<svg"},
		{name: "settings page", path: "/settings/rbac", status: 200, body: index, cache: cacheRevalid, ctype: "text/html"},
		{name: "login page", path: "/login?return=%2Fsettings", status: 200, body: index, cache: cacheRevalid, ctype: "text/html"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, hs.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			// Without this, the transport asks for gzip and decodes it.
			req.Header.Set("Accept-Encoding", "identity")
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Header.Get("Content-Encoding") == "gzip"; got != tc.gzip {
				t.Fatalf("gzip %v, want %v", got, tc.gzip)
			}
			if tc.gzip {
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if !strings.Contains(string(body), tc.body) {
				t.Errorf("body %q does not contain %q", body, tc.body)
			}
			if tc.cache != "" && resp.Header.Get("Cache-Control") != tc.cache {
				t.Errorf("Cache-Control %q, want %q", resp.Header.Get("Cache-Control"), tc.cache)
			}
			if tc.ctype != "" && !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.ctype) {
				t.Errorf("Content-Type %q, want %s", resp.Header.Get("Content-Type"), tc.ctype)
			}
			if tc.ctype == "text/html" && !strings.Contains(resp.Header.Get("Content-Security-Policy"), "connect-src 'self'") {
				t.Errorf("Content-Security-Policy %q does not keep the page on this server", resp.Header.Get("Content-Security-Policy"))
			}
		})
	}
}

func TestUIRevalidation(t *testing.T) {
	hs := uiServer(t)
	get := func(etag string) *http.Response {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, hs.URL+"/", nil)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	first := get("")
	etag := first.Header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	if got := get(etag).StatusCode; got != http.StatusNotModified {
		t.Errorf("with If-None-Match: status %d, want 304", got)
	}
	if got := get(`"other"`).StatusCode; got != http.StatusOK {
		t.Errorf("with another ETag: status %d, want 200", got)
	}
}

func TestLoadUIWithoutIndex(t *testing.T) {
	if _, err := loadUI(fstest.MapFS{"assets/a.js": {Data: []byte("x")}}); err == nil || !strings.Contains(err.Error(), "no index.html") {
		t.Errorf("err %v, want no index.html", err)
	}
}

// TestUIRoutes checks the UI as the API serves it: public pages, and API
// paths that never fall back to it.
func TestUIRoutes(t *testing.T) {
	en := newEnv(t)
	admin := en.tokens["admin"]
	// What a browser sends when it loads a page.
	browser := map[string]string{"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
	for _, tc := range []struct {
		name   string
		req    request
		status int
		detail string
	}{
		{name: "page, anonymous", req: request{method: http.MethodGet, path: "/"}, status: http.StatusOK},
		{name: "client route, anonymous", req: request{method: http.MethodGet, path: "/settings/rbac"}, status: http.StatusOK},
		{name: "asset, anonymous", req: request{method: http.MethodGet, path: "/favicon.svg"}, status: http.StatusOK},
		// Only the UI's own paths are public.
		{name: "other path, anonymous", req: request{method: http.MethodGet, path: "/index.html"}, status: http.StatusUnauthorized},
		{name: "unknown API path, anonymous", req: request{method: http.MethodGet, path: "/api/v2/apps"}, status: http.StatusUnauthorized},
		{name: "unknown API path", req: request{method: http.MethodGet, path: "/api/v2/apps", token: admin}, status: http.StatusNotFound},
		{name: "unknown API path under a known one", req: request{method: http.MethodGet, path: "/api/v1/applications/x/y/z", token: admin}, status: http.StatusNotFound},
		// A browser loading an unknown page gets index.html (the client
		// router says "page not found"), never an API path.
		{name: "unknown page, browser, anonymous", req: request{method: http.MethodGet, path: "/foo", header: browser}, status: http.StatusOK},
		{name: "unknown nested page, browser", req: request{method: http.MethodGet, path: "/no/such/page?x=1", header: browser}, status: http.StatusOK},
		{name: "unknown page, not a browser, anonymous", req: request{method: http.MethodGet, path: "/foo"}, status: http.StatusUnauthorized},
		{name: "unknown page, not a browser", req: request{method: http.MethodGet, path: "/foo", token: admin}, status: http.StatusNotFound},
		{name: "unknown page, POST from a browser", req: request{method: http.MethodPost, path: "/foo", header: browser}, status: http.StatusUnauthorized},
		{name: "unknown API path, no credentials", req: request{method: http.MethodGet, path: "/api/v1/nope"}, status: http.StatusUnauthorized},
		{name: "unknown API path, browser, anonymous", req: request{method: http.MethodGet, path: "/api/v1/nope", header: browser}, status: http.StatusUnauthorized},
		{name: "API root, browser, anonymous", req: request{method: http.MethodGet, path: "/api", header: browser}, status: http.StatusUnauthorized},
		{name: "unknown API path, browser", req: request{method: http.MethodGet, path: "/api/v1/nope", header: browser, token: admin}, status: http.StatusNotFound},
		{name: "dot segments into the API, browser, anonymous", req: request{method: http.MethodGet, path: "/foo/%2e%2e/api/v1/nope", header: browser}, status: http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := en.do(tc.req)
			if tc.status != http.StatusOK {
				res.wantProblem(t, tc.status, "", tc.detail)
				return
			}
			res.wantStatus(t, http.StatusOK)
			if tc.req.path == "/favicon.svg" {
				return
			}
			if !strings.HasPrefix(res.header.Get("Content-Type"), "text/html") || !bytes.Contains(res.body, []byte("<html")) {
				t.Errorf("not the UI's page: %s %s", res.header.Get("Content-Type"), res.body)
			}
			if got := res.header.Get("Cache-Control"); got != cacheRevalid {
				t.Errorf("Cache-Control %q, want %q", got, cacheRevalid)
			}
		})
	}
}
