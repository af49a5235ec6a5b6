package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/strvals"
	"sigs.k8s.io/yaml"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// helmMaxExpansion bounds how much larger a values document may grow when
// its YAML aliases are expanded (the bound manifest.Parse applies).
const helmMaxExpansion = 64

// helmValues merges the user's values in helm's order (the chart's own
// defaults are merged later by Helm): valueFiles in order, then the inline
// values as one more values file (valuesObject replaces values, as in Argo
// CD), then parameters (all --set, then all --set-string), then
// fileParameters (--set-file).
func helmValues(in toolInput, h *appspec.Helm) (map[string]any, error) {
	base := map[string]any{}
	for _, f := range h.ValueFiles {
		data, err := readHelmFile(in, f)
		if errors.Is(err, ErrPathNotFound) && h.IgnoreMissingValueFiles {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("values file: %w", err)
		}
		m, err := helmLoadValues(f, data)
		if err != nil {
			return nil, err
		}
		base = loader.MergeMaps(base, m)
	}

	var inline []byte
	switch {
	case h.ValuesObject != nil:
		b, err := json.Marshal(h.ValuesObject)
		if err != nil {
			return nil, fmt.Errorf("%w: valuesObject: %w", ErrHelmValues, err)
		}
		inline = b
	case h.Values != "":
		inline = []byte(h.Values)
	}
	if inline != nil {
		if len(inline) > manifest.MaxFileBytes {
			return nil, fmt.Errorf("%w: inline values are larger than %d bytes", ErrHelmValues, manifest.MaxFileBytes)
		}
		m, err := helmLoadValues("inline values", inline)
		if err != nil {
			return nil, err
		}
		base = loader.MergeMaps(base, m)
	}

	var set, setString []string
	for _, p := range h.Parameters {
		kv := p.Name + "=" + helmEscapeSetValue(p.Value)
		if p.ForceString {
			setString = append(setString, kv)
		} else {
			set = append(set, kv)
		}
	}
	for _, kv := range set {
		if err := strvals.ParseInto(kv, base); err != nil {
			return nil, fmt.Errorf("%w: parameter %q: %w", ErrHelmValues, kv, err)
		}
	}
	for _, kv := range setString {
		if err := strvals.ParseIntoString(kv, base); err != nil {
			return nil, fmt.Errorf("%w: parameter %q: %w", ErrHelmValues, kv, err)
		}
	}
	for _, fp := range h.FileParameters {
		var readErr error
		reader := func(rs []rune) (any, error) {
			data, err := readHelmFile(in, string(rs))
			if err != nil {
				readErr = err
				return nil, err
			}
			return string(data), nil
		}
		err := strvals.ParseIntoFile(fp.Name+"="+helmEscapeSetValue(fp.Path), base, reader)
		if readErr != nil {
			return nil, fmt.Errorf("file parameter %s: %w", fp.Name, readErr)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: file parameter %s: %w", ErrHelmValues, fp.Name, err)
		}
	}
	return base, nil
}

// helmEscapeSetValue escapes the commas of a parameter value, so that
// "a,b" stays one string rather than helm's list syntax, unless the value
// is a {a,b} list; this is what Argo CD does to its --set arguments.
func helmEscapeSetValue(v string) string {
	if strings.HasPrefix(v, "{") && strings.HasSuffix(v, "}") {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == ',' && (i == 0 || v[i-1] != '\\') {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// helmLoadValues parses a values file with Helm's own loader (several
// documents merge), after refusing documents whose aliases expand too much.
func helmLoadValues(name string, data []byte) (map[string]any, error) {
	if err := helmCheckExpansion(data); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrHelmValues, name, err)
	}
	m, err := loader.LoadValues(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrHelmValues, name, err)
	}
	return m, nil
}

// helmCheckExpansion refuses YAML documents that grow by more than
// helmMaxExpansion when their aliases are expanded (a YAML bomb).
func helmCheckExpansion(data []byte) error {
	reader := manifest.NewYAMLReader(data)
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("document %d: %w", doc, err)
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return fmt.Errorf("document %d: %w", doc, err)
		}
		if len(js) > helmMaxExpansion*len(raw)+4096 {
			return fmt.Errorf("document %d expands too much (YAML alias bomb?)", doc)
		}
	}
}

// readHelmFile reads a value file or file parameter: a path relative to the
// chart directory that stays inside the checkout, or $ref/path inside the
// checkout of the source named ref, through that checkout's repoRoot. A
// chart from a Helm repository has no checkout, so it takes only $ref/
// paths.
func readHelmFile(in toolInput, p string) ([]byte, error) {
	root, rel, err := helmFilePath(in, p)
	if err != nil {
		return nil, err
	}
	repo, err := openRepoRoot(root, in.Limit)
	if err != nil {
		return nil, err
	}
	defer repo.Close()
	if rel, err = repo.rel(rel); err != nil {
		return nil, fmt.Errorf("%w: %q leaves the repository", ErrBadPath, p)
	}
	b, err := repo.readFile(rel)
	if errors.Is(err, ErrPathNotFound) {
		return nil, fmt.Errorf("%w: %q", ErrPathNotFound, p)
	}
	if err != nil {
		return nil, fmt.Errorf("%q: %w", p, err)
	}
	return b, nil
}

// helmFilePath splits p (see readHelmFile) into its checkout root and its
// path there (absolute, or relative to the root).
func helmFilePath(in toolInput, p string) (root, rel string, _ error) {
	switch {
	case strings.Contains(p, "://"):
		return "", "", fmt.Errorf("%w: %q: remote files are not supported", ErrBadPath, p)
	case strings.HasPrefix(p, "$"):
		ref, rest, _ := strings.Cut(p[1:], "/")
		r, ok := in.Refs[ref]
		if !ok {
			return "", "", fmt.Errorf("%w: %q: no source has ref %q", ErrBadPath, p, ref)
		}
		root, rel = r, rest
	case in.Dir == "":
		return "", "", fmt.Errorf("%w: %q: a chart from a Helm repository takes only $ref/ files", ErrBadPath, p)
	default:
		root, rel = in.Root, p
	}
	if rel == "" || filepath.IsAbs(rel) || strings.HasPrefix(rel, "/") {
		return "", "", fmt.Errorf("%w: %q must be a relative path", ErrBadPath, p)
	}
	if root == in.Root && in.Dir != "" && !strings.HasPrefix(p, "$") {
		rel = filepath.Join(in.Dir, filepath.FromSlash(rel)) // a real path, as the repoRoot's
	}
	return root, rel, nil
}
