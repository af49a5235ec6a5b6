package appspec

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestArgoCorpus parses every manifest of testdata/argocd-corpus, written
// from Argo CD's documentation to cover each Application and AppProject
// field. A file's first line says what it expects: "# want: ok", or
// "# want: refused FIELD" for a refusal naming FIELD by its full path.
func TestArgoCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "argocd-corpus", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("the corpus is empty")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := corpusWant(t, data)
			switch {
			case bytes.Contains(data, []byte("\nkind: Application\n")):
				_, err = ParseApplication(data)
			case bytes.Contains(data, []byte("\nkind: AppProject\n")):
				_, err = ParseProject(data)
			default:
				t.Fatal("neither an Application nor an AppProject")
			}
			if want == "" {
				if err != nil {
					t.Fatalf("want it parsed; got %v", err)
				}
				return
			}
			var fe *FieldError
			switch {
			case err == nil:
				t.Fatalf("want %s refused; it parsed", want)
			case !errors.As(err, &fe):
				t.Fatalf("want %s refused by name; got an error naming no field: %v", want, err)
			case fe.Field != want:
				t.Fatalf("want %s refused; got %v", want, err)
			}
		})
	}
}

// corpusWant reads a corpus file's expectation: "" for ok, or the field
// it wants refused.
func corpusWant(t *testing.T, data []byte) string {
	t.Helper()
	line, _, _ := bytes.Cut(data, []byte("\n"))
	rest, ok := strings.CutPrefix(string(line), "# want: ")
	if !ok {
		t.Fatalf("the first line is %q; want \"# want: ok\" or \"# want: refused FIELD\"", line)
	}
	if rest == "ok" {
		return ""
	}
	field, ok := strings.CutPrefix(rest, "refused ")
	if !ok || field == "" {
		t.Fatalf("the expectation %q is neither ok nor refused FIELD", rest)
	}
	return field
}
