package repocred

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/settings"
)

// Registered repositories win over templates; among each, the longest
// URL prefix wins; a URL no one covers has no credential.
func TestLookup(t *testing.T) {
	st, err := settings.New(&secretstore.Memory{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []settings.Repository{
		{URL: "https://git.example/org/app.git", Username: "repo"},
		{URL: "https://charts.example/private", Type: settings.RepoTypeHelm, Username: "chart"},
	} {
		if err := st.PutRepo(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []settings.Repository{
		{URL: "https://git.example/", Username: "host"},
		{URL: "https://git.example/org/", Username: "org"},
	} {
		if err := st.PutRepoCreds(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	res, err := NewResolver(st, 0)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		url, user string
		template  bool
	}{
		{url: "https://git.example/org/app.git", user: "repo"},
		{url: "https://git.example/org/app", user: "repo"},
		{url: "https://git.example/org/other.git", user: "org", template: true},
		{url: "https://git.example/else/x.git", user: "host", template: true},
		{url: "https://charts.example/private/", user: "chart"},
		{url: "https://public.example/x"},
	}
	for _, tt := range tests {
		c, err := res.Lookup(t.Context(), tt.url)
		if err != nil {
			t.Fatal(err)
		}
		var user string
		var tmpl bool
		if c != nil {
			user, tmpl = c.Username, c.Template
		}
		if user != tt.user || tmpl != tt.template {
			t.Errorf("Lookup(%s) = user %q template %v, want %q %v", tt.url, user, tmpl, tt.user, tt.template)
		}
	}
}

func TestBypass(t *testing.T) {
	tests := []struct {
		noProxy, host string
		want          bool
	}{
		{"", "a.example", false},
		{"*", "a.example", true},
		{"a.example", "a.example", true},
		{"example.com", "git.example.com", true},
		{".example.com", "git.example.com", true},
		{".example.com", "example.org", false},
		{"10.0.0.0/8, 192.168.1.1", "10.1.2.3", true},
		{"10.0.0.0/8", "11.1.2.3", false},
		{"git.example:443", "git.example", true},
	}
	for _, tt := range tests {
		if got := Bypass(tt.noProxy, tt.host); got != tt.want {
			t.Errorf("Bypass(%q, %q) = %v, want %v", tt.noProxy, tt.host, got, tt.want)
		}
	}
}

// A credential's proxy carries requests to other hosts and skips those in
// noProxy; Authorize sets basic or bearer auth.
func TestTransportAndAuthorize(t *testing.T) {
	var proxied []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied = append(proxied, r.Host)
	}))
	t.Cleanup(proxy.Close)
	direct := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(direct.Close)
	c := &Credential{Repository: settings.Repository{Proxy: proxy.URL, NoProxy: "127.0.0.1"}}
	tr, err := c.Transport(http.DefaultTransport.(*http.Transport))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"http://charts.invalid/index.yaml", direct.URL + "/index.yaml"} {
		resp, err := (&http.Client{Transport: tr}).Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if d := cmp.Diff([]string{"charts.invalid"}, proxied); d != "" {
		t.Fatalf("proxied hosts (-want +got):\n%s", d)
	}

	for _, tt := range []struct {
		repo settings.Repository
		want string
	}{
		{settings.Repository{Username: "u", Password: "p"}, "Basic dTpw"},
		{settings.Repository{BearerToken: "tok"}, "Bearer tok"},
		{settings.Repository{}, ""},
	} {
		req := httptest.NewRequest(http.MethodGet, "https://x/", nil)
		(&Credential{Repository: tt.repo}).Authorize(req)
		if got := req.Header.Get("Authorization"); got != tt.want {
			t.Errorf("Authorization = %q, want %q", got, tt.want)
		}
	}
}
