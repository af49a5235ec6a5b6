package api

import (
	"net/http"
	"testing"

	"github.com/windlass-cd/windlass/internal/gpgkey"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// TestGPGKeys adds, lists, gets and removes GPG keys, and refuses bad key
// data and key IDs.
func TestGPGKeys(t *testing.T) {
	en := newEnv(t)
	_, pub, err := testbed.NewGPGKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := gpgkey.Parse(pub)
	if err != nil {
		t.Fatal(err)
	}
	k := keys[0]
	path := "/api/v1/gpgkeys/" + k.KeyID
	create := jsonBody(t, GPGKeyCreate{KeyData: pub})
	list := GPGKeyList{Items: []gpgkey.Key{k}}
	runSteps(t, en, []step{
		{name: "add", req: request{method: http.MethodPost, path: "/api/v1/gpgkeys", body: create},
			status: http.StatusCreated, check: wantJSON(list)},
		{name: "duplicate", req: request{method: http.MethodPost, path: "/api/v1/gpgkeys", body: create},
			status: http.StatusConflict, detail: "exists"},
		{name: "upsert", req: request{method: http.MethodPost, path: "/api/v1/gpgkeys?upsert=true", body: create},
			status: http.StatusCreated, check: wantJSON(list)},
		{name: "not a key", req: request{method: http.MethodPost, path: "/api/v1/gpgkeys", body: jsonBody(t, GPGKeyCreate{KeyData: "hello"})},
			status: http.StatusBadRequest, detail: "not an ASCII-armored public key"},
		{name: "a private key", req: request{method: http.MethodPost, path: "/api/v1/gpgkeys",
			body: jsonBody(t, GPGKeyCreate{KeyData: "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nxx\n-----END PGP PRIVATE KEY BLOCK-----\n"})},
			status: http.StatusBadRequest, detail: "private key"},
		{name: "the viewer may not add", req: request{method: http.MethodPost, path: "/api/v1/gpgkeys?upsert=true", body: create, token: en.tokens[viewerAccount]},
			status: http.StatusForbidden},
		{name: "list", req: request{method: http.MethodGet, path: "/api/v1/gpgkeys"}, status: http.StatusOK, check: wantJSON(list)},
		{name: "get", req: request{method: http.MethodGet, path: path}, status: http.StatusOK, check: wantJSON(k)},
		{name: "bad key ID", req: request{method: http.MethodGet, path: "/api/v1/gpgkeys/ABC"}, status: http.StatusBadRequest, detail: "16 hex digits"},
		{name: "delete", req: request{method: http.MethodDelete, path: path}, status: http.StatusNoContent},
		{name: "get deleted", req: request{method: http.MethodGet, path: path}, status: http.StatusNotFound},
		{name: "list empty", req: request{method: http.MethodGet, path: "/api/v1/gpgkeys"},
			status: http.StatusOK, check: wantJSON(GPGKeyList{Items: []gpgkey.Key{}})},
	})
}
