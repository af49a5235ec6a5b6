package api

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/windlass-cd/windlass/web"
)

// The web UI (package web) is served at / by every server: index.html for
// each of its pages (the client routes of the single-page app), the hashed
// files under /assets/ with an immutable cache lifetime.
const (
	uiIndex        = "index.html"
	uiAssetsPrefix = "assets/"
	cacheImmutable = "public, max-age=31536000, immutable"
	cacheRevalid   = "no-cache"
	// uiCSP lets the UI load only its own files and talk only to this
	// server: no external request can leave the browser.
	uiCSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
		"font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)

// uiPages are the UI's client routes (web/src/App.tsx): each answers
// index.html. With the hashed assets and the favicon, they are public
// routes: they hold no data (the API calls behind them authenticate).
var uiPages = []string{"/", "/login", "/applications", "/applications/:project/:name", "/settings", "/settings/:section"}

// uiFiles are the UI's routes that serve files.
var uiFiles = []string{"/" + uiAssetsPrefix + ":file", "/favicon.svg"}

func init() {
	for _, r := range append(slices.Clone(uiPages), uiFiles...) {
		publicRoutes = append(publicRoutes, http.MethodGet+" "+r)
	}
}

const msgUINotBuilt = "the web ui is not built (make ui): / serves a page that says so"

// uiFile is one file of the UI, ready to serve.
type uiFile struct {
	body, gz []byte
	ctype    string
	etag     string
}

// uiAssets holds the UI's files in memory, with gzip-compressed copies.
type uiAssets struct {
	files map[string]uiFile
}

// loadUI reads every file of fsys (the build stamp excepted).
func loadUI(fsys fs.FS) (*uiAssets, error) {
	u := &uiAssets{files: map[string]uiFile{}}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == web.BuildInfoFile {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		f := uiFile{body: b, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, ctype: mime.TypeByExtension(path.Ext(p))}
		if f.ctype == "" {
			f.ctype = http.DetectContentType(b)
		}
		f.gz = compress(b)
		u.files[p] = f
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load the web ui: %w", err)
	}
	if _, ok := u.files[uiIndex]; !ok {
		return nil, fmt.Errorf("load the web ui: no %s", uiIndex)
	}
	return u, nil
}

// compress gzips b when that saves at least a tenth (nil otherwise).
func compress(b []byte) []byte {
	if len(b) < 512 {
		return nil
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(b)
	_ = zw.Close()
	if buf.Len() > len(b)*9/10 {
		return nil
	}
	return buf.Bytes()
}

// uiHandler serves the UI's files and pages (a problem 500 when they
// cannot be loaded).
func uiHandler(log *slog.Logger) echo.HandlerFunc {
	fsys, built := web.Assets()
	u, err := loadUI(fsys)
	if err == nil && !built {
		log.Warn(msgUINotBuilt)
	}
	return func(c *echo.Context) error {
		if err != nil {
			return problem(http.StatusInternalServerError, err.Error())
		}
		return u.serve(c)
	}
}

// uiRoutes registers the UI's routes on e, served by h (uiHandler).
func uiRoutes(e *echo.Echo, h echo.HandlerFunc) {
	for _, r := range append(slices.Clone(uiPages), uiFiles...) {
		e.GET(r, h)
	}
}

// uiFallback is a middleware, placed before authentication, that answers
// h's index.html to a browser loading a page that no route matches
// outside /api/: the client router then shows its "page not found". Every
// other request goes on, so that no path under /api/ becomes public and a
// request that is not a page load still gets 401, 404 or 405.
func uiFallback(h echo.HandlerFunc) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error {
			if c.RouteInfo().Name == echo.NotFoundRouteName && isPageLoad(c.Request()) {
				return h(c)
			}
			return next(c)
		}
	}
}

// isPageLoad says whether r is a browser loading a page outside /api/:
// a GET (or HEAD) that accepts text/html. Dot segments are resolved
// first, so that /x/../api/... counts as an API path.
func isPageLoad(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	p := path.Clean("/" + r.URL.Path)
	if p == "/api" || strings.HasPrefix(p, "/api/") {
		return false
	}
	return accepts(r.Header.Get(echo.HeaderAccept), "text/html")
}

// serve answers a UI path: a file, or index.html for a page.
func (u *uiAssets) serve(c *echo.Context) error {
	p := c.Request().URL.Path
	name := strings.TrimPrefix(path.Clean("/"+p), "/")
	if f, ok := u.files[name]; ok && name != uiIndex {
		cache := cacheRevalid
		if strings.HasPrefix(name, uiAssetsPrefix) {
			cache = cacheImmutable
		}
		return u.write(c, f, cache)
	}
	if strings.HasPrefix(name, uiAssetsPrefix) {
		return problem(http.StatusNotFound, "no such file: "+p)
	}
	return u.write(c, u.files[uiIndex], cacheRevalid)
}

func (u *uiAssets) write(c *echo.Context, f uiFile, cache string) error {
	h := c.Response().Header()
	h.Set(echo.HeaderCacheControl, cache)
	h.Set("ETag", f.etag)
	h.Set(echo.HeaderXContentTypeOptions, "nosniff")
	h.Set(echo.HeaderVary, echo.HeaderAcceptEncoding)
	if strings.HasPrefix(f.ctype, "text/html") {
		h.Set(echo.HeaderContentSecurityPolicy, uiCSP)
		h.Set(echo.HeaderXFrameOptions, "DENY")
		h.Set("Referrer-Policy", "same-origin")
	}
	if match := c.Request().Header.Get("If-None-Match"); match != "" && strings.Contains(match, f.etag) {
		return c.NoContent(http.StatusNotModified)
	}
	body := f.body
	if f.gz != nil && acceptsGzip(c.Request().Header.Get(echo.HeaderAcceptEncoding)) {
		h.Set(echo.HeaderContentEncoding, "gzip")
		body = f.gz
	}
	return c.Blob(http.StatusOK, f.ctype, body)
}

// acceptsGzip reads Accept-Encoding (a q of 0 refuses).
func acceptsGzip(header string) bool { return accepts(header, "gzip") }

// accepts reads an Accept or Accept-Encoding header: whether it names
// value (a q of 0 refuses; wildcards do not count).
func accepts(header, value string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), value) {
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}
