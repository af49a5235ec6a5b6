// Package dextest drives Dex's login pages over HTTP as a person with a
// browser would, for the tests of single sign-on: it follows redirects,
// keeps cookies, picks a connector, fills the password form, approves the
// grant and enters device codes. It also runs the OAuth device flow.
package dextest

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
)

// maxSteps bounds the requests of one Visit.
const maxSteps = 30

// Browser is one person's browser: a cookie jar, and the credentials it
// types into Dex's password form.
type Browser struct {
	HTTP               *http.Client
	Username, Password string
	// Connector is the ID of the connector to pick on Dex's login page
	// when it lists several (default: the first).
	Connector string
}

// NewBrowser returns a Browser with an empty cookie jar that logs in as
// username. It does not follow redirects by itself: Visit does, so that it
// can stop.
func NewBrowser(username, password string) *Browser {
	jar, _ := cookiejar.New(nil)
	return &Browser{
		HTTP: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}},
		Username: username, Password: password,
	}
}

// Page is where a Visit ended.
type Page struct {
	URL    *url.URL
	Status int
	Header http.Header
	Body   string
	// Visited lists every URL requested, in order.
	Visited []*url.URL
}

// Location is the page's redirect target, resolved.
func (p *Page) Location() *url.URL {
	loc, err := p.URL.Parse(p.Header.Get("Location"))
	if err != nil {
		return nil
	}
	return loc
}

var (
	formRe   = regexp.MustCompile(`(?s)<form([^>]*)>(.*?)</form>`)
	inputRe  = regexp.MustCompile(`<input[^>]*>`)
	attrRe   = regexp.MustCompile(`(\w+)="([^"]*)"`)
	anchorRe = regexp.MustCompile(`<a href="([^"]*/auth/([^"/?]+)[^"]*)"`)
)

// form is an HTML form: where it posts, and its named inputs.
type form struct {
	action string
	values url.Values
}

// forms lists the post forms of a page.
func forms(body string) []form {
	var out []form
	for _, m := range formRe.FindAllStringSubmatch(body, -1) {
		tag := attrs(m[1])
		if !strings.EqualFold(tag["method"], "post") {
			continue
		}
		f := form{action: tag["action"], values: url.Values{}}
		for _, in := range inputRe.FindAllString(m[2], -1) {
			if a := attrs(in); a["name"] != "" {
				f.values.Set(a["name"], a["value"])
			}
		}
		out = append(out, f)
	}
	return out
}

// attrs are the name="value" attributes in an HTML tag, unescaped.
func attrs(tag string) map[string]string {
	out := map[string]string{}
	for _, a := range attrRe.FindAllStringSubmatch(tag, -1) {
		out[a[1]] = html.UnescapeString(a[2])
	}
	return out
}

// Visit gets u and goes on through Dex's pages until stop returns true
// for a redirect's target (the Page is then that redirect), or a page comes
// that is none of Dex's login, password, approval and device pages (the
// Page is that page).
func (b *Browser) Visit(ctx context.Context, u string, stop func(*url.URL) bool) (*Page, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	var visited []*url.URL
	for range maxSteps {
		visited = append(visited, req.URL)
		res, err := b.HTTP.Do(req)
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return nil, err
		}
		page := &Page{URL: req.URL, Status: res.StatusCode, Header: res.Header, Body: string(body), Visited: visited}
		if next, err := b.next(ctx, page, stop); err != nil || next == nil {
			return page, err
		} else {
			req = next
		}
	}
	return nil, fmt.Errorf("dextest: more than %d requests from %s", maxSteps, u)
}

// next is the request that follows page, or nil when the visit ends.
func (b *Browser) next(ctx context.Context, page *Page, stop func(*url.URL) bool) (*http.Request, error) {
	if page.Status >= 300 && page.Status < 400 {
		loc := page.Location()
		if loc == nil || stop(loc) {
			return nil, nil
		}
		return http.NewRequestWithContext(ctx, http.MethodGet, loc.String(), nil)
	}
	if page.Status != http.StatusOK {
		return nil, nil
	}
	for _, f := range forms(page.Body) {
		switch {
		case f.values.Has("password"):
			f.values.Set("login", b.Username)
			f.values.Set("password", b.Password)
		case f.values.Get("approval") == "approve":
		case f.values.Has("user_code") && f.values.Get("user_code") != "":
		default:
			continue
		}
		target, err := page.URL.Parse(f.action)
		if err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), strings.NewReader(f.values.Encode()))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return req, nil
	}
	// The login page: one link per connector.
	links := anchorRe.FindAllStringSubmatch(page.Body, -1)
	for _, l := range links {
		if b.Connector == "" || l[2] == b.Connector {
			target, err := page.URL.Parse(html.UnescapeString(l[1]))
			if err != nil {
				return nil, err
			}
			return http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
		}
	}
	if len(links) > 0 {
		return nil, errors.New("dextest: the login page has no connector " + b.Connector)
	}
	return nil, nil
}
