package manifest

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string // Kind/name
		wantErr string
	}{
		{name: "multi-document", in: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: b}\n",
			want: []string{"ConfigMap/a", "Service/b"}},
		{name: "empty and comment documents skipped", in: "---\n# just a comment\n---\n\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
			want: []string{"ConfigMap/a"}},
		{name: "json", in: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"j"}}`, want: []string{"ConfigMap/j"}},
		{name: "list flattened", in: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: x}\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: yy}\n",
			want: []string{"ConfigMap/x", "Secret/yy"}},
		{name: "malformed yaml", in: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a\n", wantErr: "document 1"},
		{name: "missing kind", in: "apiVersion: v1\nmetadata: {name: a}\n", wantErr: "is missing"},
		{name: "missing name", in: "apiVersion: v1\nkind: ConfigMap\n", wantErr: "no metadata.name"},
		{name: "yaml bomb", in: bomb(), wantErr: "document 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Parse("f.yaml", []byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrInvalidManifest) {
					t.Fatalf("Parse() error = %v, want one containing %q that wraps ErrInvalidManifest", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse() error = %v", err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, o.GetKind()+"/"+o.GetName())
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Fatalf("objects (-want +got):\n%s", d)
			}
		})
	}
}

// TestParseLongLastLine: a file's last line is read whole whatever its
// length against the reader's 64 KiB buffer, with or without a final
// newline. A line of exactly 64 KiB without one was lost (no object, no
// error).
func TestParseLongLastLine(t *testing.T) {
	const head, tail = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"long"},"data":{"k":"`, `"}}`
	for _, size := range []int{100, 64<<10 - 1, 64 << 10, 64<<10 + 1, 128 << 10} {
		for _, end := range []string{"", "\n", "\r\n"} {
			line := head + strings.Repeat("x", size-len(head)-len(tail)) + tail
			for _, in := range []string{line + end, "apiVersion: v1\nkind: Service\nmetadata: {name: first}\n---\n" + line + end} {
				objs, err := Parse("f.json", []byte(in))
				if err != nil {
					t.Fatalf("last line of %d bytes, ending %q: %v", size, end, err)
				}
				if len(objs) == 0 || objs[len(objs)-1].GetName() != "long" {
					t.Fatalf("last line of %d bytes, ending %q: %d objects, the last one lost", size, end, len(objs))
				}
				if v, _, _ := unstructured.NestedString(objs[len(objs)-1].Object, "data", "k"); len(v) != size-len(head)-len(tail) {
					t.Errorf("last line of %d bytes, ending %q: value of %d bytes, want %d", size, end, len(v), size-len(head)-len(tail))
				}
			}
		}
	}
}

func TestParseTooLarge(t *testing.T) {
	_, err := Parse("big.yaml", make([]byte, MaxFileBytes+1))
	if !errors.Is(err, ErrInvalidManifest) || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("Parse() error = %v, want size limit", err)
	}
}

// bomb builds a "billion laughs" document: nine levels of aliases, each
// nine times the previous one.
func bomb() string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		b.WriteString(n + ": &" + n + " [")
		for i := 0; i < 9; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString("*" + prev)
		}
		b.WriteString("]\n")
		prev = n
	}
	b.WriteString("data: {x: *i}\n")
	return b.String()
}

func TestSortAndTracking(t *testing.T) {
	mk := func(kind, name, wave string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetAPIVersion("v1")
		o.SetKind(kind)
		o.SetName(name)
		o.SetNamespace("ns")
		if wave != "" {
			o.SetAnnotations(map[string]string{SyncWaveAnnotation: wave})
		}
		return o
	}
	objs := []*unstructured.Unstructured{
		mk("Deployment", "web", ""), mk("Service", "web", ""), mk("Widget", "w", ""),
		mk("ConfigMap", "late", "2"), mk("Namespace", "ns", ""), mk("Job", "pre", "-1"), mk("ConfigMap", "a", ""),
	}
	Sort(objs)
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+"/"+o.GetName())
	}
	want := []string{"Job/pre", "Namespace/ns", "ConfigMap/a", "Service/web", "Deployment/web", "Widget/w", "ConfigMap/late"}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("order (-want +got):\n%s", d)
	}
	o := mk("Deployment", "web", "")
	o.SetAPIVersion("apps/v1")
	SetTracking("default", "guestbook", o)
	if got, want := o.GetAnnotations()[TrackingAnnotation], "default/guestbook:apps/Deployment:ns/web"; got != want {
		t.Fatalf("tracking id = %q, want %q", got, want)
	}
	if got := o.GetLabels()[AppLabel]; got != "default.guestbook" {
		t.Fatalf("app label = %q", got)
	}
	if got := OwnerApp(o); got != "default/guestbook" {
		t.Fatalf("OwnerApp = %q", got)
	}
}
