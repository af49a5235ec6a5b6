package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/windlass-cd/windlass/internal/failure"
)

// Limits that keep one file from exhausting a worker.
const (
	// MaxFileBytes is the largest manifest file accepted.
	MaxFileBytes = 8 << 20
	// MaxObjects is the largest number of objects one render may produce.
	MaxObjects = 20000
	// maxExpansion bounds how much larger a document may grow when its
	// aliases are expanded (a YAML bomb grows exponentially).
	maxExpansion = 64
)

// ErrInvalidManifest is wrapped by every parse error.
var ErrInvalidManifest = failure.Permanent("InvalidManifest", "invalid manifest")

// Parse reads every object in a YAML or JSON stream. name is used in errors.
func Parse(name string, data []byte) ([]*unstructured.Unstructured, error) {
	return parse(name, data, true)
}

// ParseUnnamed is Parse for objects that are only inspected, never applied
// (health fixtures): they may lack metadata.name.
func ParseUnnamed(name string, data []byte) ([]*unstructured.Unstructured, error) {
	return parse(name, data, false)
}

func parse(name string, data []byte, named bool) ([]*unstructured.Unstructured, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%w: %s is %d bytes, more than the limit of %d", ErrInvalidManifest, name, len(data), MaxFileBytes)
	}
	reader := NewYAMLReader(data)
	var out []*unstructured.Unstructured
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: document %d: %w", ErrInvalidManifest, name, doc, err)
		}
		objs, err := parseDocument(raw, named)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: document %d: %w", ErrInvalidManifest, name, doc, err)
		}
		out = append(out, objs...)
		if len(out) > MaxObjects {
			return nil, fmt.Errorf("%w: %s: more than %d objects", ErrInvalidManifest, name, MaxObjects)
		}
	}
}

func parseDocument(raw []byte, named bool) ([]*unstructured.Unstructured, error) {
	if len(bytes.TrimSpace(stripComments(raw))) == 0 {
		return nil, nil
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, err
	}
	if len(js) > maxExpansion*len(raw)+4096 {
		return nil, errors.New("document expands too much (YAML alias bomb?)")
	}
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		return nil, nil
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(js); err != nil {
		return nil, err
	}
	if obj.IsList() {
		list, err := obj.ToList()
		if err != nil {
			return nil, err
		}
		items := make([]*unstructured.Unstructured, 0, len(list.Items))
		for i := range list.Items {
			if err := check(&list.Items[i], named); err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			items = append(items, &list.Items[i])
		}
		return items, nil
	}
	if err := check(obj, named); err != nil {
		return nil, err
	}
	return []*unstructured.Unstructured{obj}, nil
}

func check(obj *unstructured.Unstructured, named bool) error {
	switch {
	case obj.GetAPIVersion() == "":
		return errors.New("apiVersion is missing")
	case obj.GetKind() == "":
		return errors.New("kind is missing")
	case named && obj.GetName() == "" && obj.GetGenerateName() == "":
		return fmt.Errorf("%s has no metadata.name", obj.GetKind())
	}
	return nil
}

func stripComments(raw []byte) []byte {
	var b bytes.Buffer
	for _, line := range strings.Split(string(raw), "\n") {
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") || t == "---" {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}
