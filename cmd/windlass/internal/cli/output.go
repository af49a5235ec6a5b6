package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"
)

// print writes raw, an answer of the API, as -o asks: indented JSON, YAML,
// or else what table writes.
func (f *flags) print(raw []byte, table func(w io.Writer)) error {
	out := ""
	if f.output != nil {
		out = *f.output
	}
	w := f.cli.stdout
	switch out {
	case "json":
		return printJSON(w, raw)
	case "yaml":
		y, err := yaml.JSONToYAML(raw)
		if err != nil {
			return err
		}
		_, err = w.Write(y)
		return err
	}
	table(w)
	return nil
}

func printJSON(out io.Writer, v json.RawMessage) error {
	var b bytes.Buffer
	if err := json.Indent(&b, v, "", "  "); err != nil {
		return err
	}
	b.WriteByte('\n')
	_, err := out.Write(b.Bytes())
	return err
}

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(&trimWriter{w: w}, 0, 4, 2, ' ', 0)
}

// trimWriter drops the spaces that end lines: tabwriter pads the empty
// cells of a line's end.
type trimWriter struct {
	w      io.Writer
	spaces int // spaces held back
}

func (t *trimWriter) Write(p []byte) (int, error) {
	out := make([]byte, 0, len(p))
	for _, b := range p {
		switch b {
		case ' ':
			t.spaces++
			continue
		case '\n':
			t.spaces = 0
		default:
			out = append(out, bytes.Repeat([]byte{' '}, t.spaces)...)
			t.spaces = 0
		}
		out = append(out, b)
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// plural is "1 resource", "2 resources".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// table writes a header (columns separated by tabs) and a row of cells
// for each item.
func table[T any](w io.Writer, header string, items []T, row func(T) []string) {
	tw := newTable(w)
	fmt.Fprintln(tw, header)
	for _, it := range items {
		fmt.Fprintln(tw, strings.Join(row(it), "\t"))
	}
	tw.Flush()
}

// details writes "Key:  value" lines from pairs, leaving out empty values.
func details(w io.Writer, pairs ...string) {
	tw := newTable(w)
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", pairs[i], pairs[i+1])
		}
	}
	tw.Flush()
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339)
}

// short abbreviates a commit SHA to 7 characters, and leaves other
// revisions (branches, tags, versions) as they are.
func short(rev string) string {
	if len(rev) < 12 || strings.Trim(rev, "0123456789abcdef") != "" {
		return rev
	}
	return rev[:7]
}

// revision shows a revision and its SHA: "main (1a2b3c4)".
func revision(rev, sha string) string {
	switch {
	case sha == "" || short(sha) == short(rev):
		return rev
	case rev == "":
		return short(sha)
	}
	return rev + " (" + short(sha) + ")"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// orDash shows an empty cell as "-".
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
