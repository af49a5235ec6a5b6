package manifest

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestMaskSecrets(t *testing.T) {
	secret := func(field string, kv ...string) map[string]any {
		vals := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			vals[kv[i]] = kv[i+1]
		}
		return map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{
			"name": "s", "annotations": map[string]any{lastApplied: `{"data":{"password":"` + b64("hunter2") + `"}}`}}, field: vals}
	}
	tests := []struct {
		name    string
		objs    []map[string]any
		want    []string // the objects after masking, as JSON
		secrets []string // values that must not appear anywhere
	}{{
		name:    "equal values share a mask, different values do not",
		objs:    []map[string]any{secret("data", "password", b64("hunter2"), "user", b64("admin")), secret("data", "password", b64("hunter3"), "user", b64("admin"))},
		want:    []string{`{"apiVersion":"v1","data":{"password":"++++++++","user":"+++++++++"},"kind":"Secret","metadata":{"name":"s"}}`, `{"apiVersion":"v1","data":{"password":"++++++++++","user":"+++++++++"},"kind":"Secret","metadata":{"name":"s"}}`},
		secrets: []string{"hunter2", "hunter3", b64("hunter2"), b64("hunter3"), b64("admin")},
	}, {
		name:    "stringData and data compare decoded",
		objs:    []map[string]any{secret("data", "token", b64("abc")), secret("stringData", "token", "abc")},
		want:    []string{`{"apiVersion":"v1","data":{"token":"++++++++"},"kind":"Secret","metadata":{"name":"s"}}`, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":{"token":"++++++++"}}`},
		secrets: []string{"abc", b64("abc"), "hunter2"},
	}, {
		name:    "a nil side and other kinds are left alone",
		objs:    []map[string]any{nil, {"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"k": "visible"}}, secret("data", "k", "not base64!")},
		want:    []string{`null`, `{"apiVersion":"v1","data":{"k":"visible"},"kind":"ConfigMap"}`, `{"apiVersion":"v1","data":{"k":"++++++++"},"kind":"Secret","metadata":{"name":"s"}}`},
		secrets: []string{"not base64!", "hunter2"},
	}, {
		name: "a Secret of another group is not a core Secret",
		objs: []map[string]any{{"apiVersion": "example.com/v1", "kind": "Secret", "data": map[string]any{"k": "v"}}},
		want: []string{`{"apiVersion":"example.com/v1","data":{"k":"v"},"kind":"Secret"}`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			MaskSecrets(tt.objs...)
			for i, o := range tt.objs {
				b, err := json.Marshal(o)
				if err != nil {
					t.Fatal(err)
				}
				if string(b) != tt.want[i] {
					t.Errorf("object %d:\n got %s\nwant %s", i, b, tt.want[i])
				}
				for _, s := range tt.secrets {
					if strings.Contains(string(b), s) {
						t.Errorf("object %d shows the secret %q: %s", i, s, b)
					}
				}
			}
		})
	}
}
