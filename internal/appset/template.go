package appset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"github.com/valyala/fasttemplate"
	"sigs.k8s.io/yaml"
)

// renderer renders strings against a parameter set, in one of the two
// template languages.
type renderer struct {
	goTemplate bool
	options    []string
	// cache holds parsed Go templates by text.
	cache map[string]*template.Template
}

func newRenderer(goTemplate bool, options []string) *renderer {
	return &renderer{goTemplate: goTemplate, options: options, cache: map[string]*template.Template{}}
}

// funcs is the Go template function set: Sprig's generic functions
// without those that read the environment or the network, and Argo CD's
// own additions.
var funcs = func() template.FuncMap {
	m := sprig.GenericFuncMap()
	for _, name := range []string{"env", "expandenv", "getHostByName"} {
		delete(m, name)
	}
	m["normalize"] = normalize
	m["slugify"] = slugify
	m["toYaml"] = toYAML
	m["fromYaml"] = fromYAML
	m["fromYamlArray"] = fromYAMLArray
	return template.FuncMap(m)
}()

func toYAML(v any) (string, error) {
	b, err := yaml.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("toYaml: %w", err)
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}

func fromYAML(s string) (map[string]any, error) {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("fromYaml: %w", err)
	}
	return m, nil
}

func fromYAMLArray(s string) ([]any, error) {
	var l []any
	if err := yaml.Unmarshal([]byte(s), &l); err != nil {
		return nil, fmt.Errorf("fromYamlArray: %w", err)
	}
	return l, nil
}

// renderString renders one string.
func (r *renderer) renderString(s string, p Params) (string, error) {
	if !strings.Contains(s, "{{") {
		return s, nil
	}
	if !r.goTemplate {
		flat := p.flat()
		return fasttemplate.ExecuteFuncString(s, "{{", "}}", func(w io.Writer, tag string) (int, error) {
			if v, ok := flat[strings.TrimSpace(tag)]; ok {
				return w.Write([]byte(v))
			}
			// An unknown placeholder stays as it is, as in Argo CD.
			return w.Write([]byte("{{" + tag + "}}"))
		}), nil
	}
	t, ok := r.cache[s]
	if !ok {
		var err error
		t, err = template.New("").Funcs(funcs).Option(r.options...).Parse(s)
		if err != nil {
			return "", fmt.Errorf("parse template %q: %w", s, err)
		}
		r.cache[s] = t
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, map[string]any(p)); err != nil {
		return "", fmt.Errorf("execute template %q: %w", s, err)
	}
	return buf.String(), nil
}

// render renders every string, key or value, of a JSON-like tree.
func (r *renderer) render(v any, p Params) (any, error) {
	switch v := v.(type) {
	case string:
		return r.renderString(v, p)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			x, err := r.render(e, p)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	}
	m, ok := asMap(v)
	if !ok {
		return v, nil
	}
	out := make(map[string]any, len(m))
	for k, e := range m {
		key, err := r.renderString(k, p)
		if err != nil {
			return nil, err
		}
		x, err := r.render(e, p)
		if err != nil {
			return nil, err
		}
		out[key] = x
	}
	return out, nil
}

// renderJSON renders a generator's spec (a matrix's second generator may
// name the first one's parameters) and decodes it back into out.
func (r *renderer) renderJSON(in, out any, p Params) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	var tree any
	if err := json.Unmarshal(b, &tree); err != nil {
		return err
	}
	tree, err = r.render(tree, p)
	if err != nil {
		return err
	}
	if b, err = json.Marshal(tree); err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// app renders the template and the patch for one parameter set into an
// Argo CD Application object.
func (r *renderer) app(tmpl Template, patch string, p Params) (map[string]any, error) {
	v, err := r.render(map[string]any(tmpl), p)
	if err != nil {
		return nil, err
	}
	obj := v.(map[string]any)
	if patch != "" {
		text, err := r.renderString(patch, p)
		if err != nil {
			return nil, fmt.Errorf("templatePatch: %w", err)
		}
		var over map[string]any
		if err := yaml.Unmarshal([]byte(text), &over); err != nil {
			return nil, fmt.Errorf("templatePatch: rendered YAML: %w", err)
		}
		mergeInto(obj, over)
	}
	obj["apiVersion"] = APIVersion
	obj["kind"] = "Application"
	return obj, nil
}
