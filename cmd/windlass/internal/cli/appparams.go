package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// sourceEdit changes one source of an application: a flag of app set or
// app unset for the tools' parameters.
type sourceEdit func(s *appspec.Source) error

// paramFlags are the flags of app set and app unset that change a tool's
// parameters, each collecting the edits it asks for in order.
type paramFlags struct {
	f     *flags
	edits []sourceEdit
}

// repeated adds a repeatable flag whose values become edits.
func (p *paramFlags) repeated(name, usage string, edit func(v string) sourceEdit) {
	p.f.Func(name, usage, func(v string) error {
		e := edit(v)
		p.edits = append(p.edits, func(s *appspec.Source) error {
			if err := e(s); err != nil {
				return fmt.Errorf("--%s %w", name, err)
			}
			return nil
		})
		return nil
	})
}

// boolean adds a flag without a value whose presence is an edit.
func (p *paramFlags) boolean(name, usage string, edit sourceEdit) {
	p.f.BoolFunc(name, usage, func(v string) error {
		if on, err := strconv.ParseBool(v); err != nil || !on {
			return errors.New("takes no value")
		}
		p.edits = append(p.edits, edit)
		return nil
	})
}

// withSetParams adds the flags of app set that set tools' parameters.
func (f *flags) withSetParams() *paramFlags {
	p := &paramFlags{f: f}
	helmSet := func(forceString bool) func(v string) sourceEdit {
		return func(v string) sourceEdit {
			return func(s *appspec.Source) error {
				name, value, err := keyValue(v)
				if err != nil {
					return err
				}
				h := helm(s)
				h.Parameters = upsert(h.Parameters, appspec.HelmParameter{Name: name, Value: value, ForceString: forceString},
					func(p appspec.HelmParameter) string { return p.Name })
				return nil
			}
		}
	}
	p.repeated("p", "a Helm parameter, `NAME=VALUE` (repeatable; the same as --helm-set)", helmSet(false))
	p.repeated("parameter", "the same as -p", helmSet(false))
	p.repeated("helm-set", "a Helm parameter, `NAME=VALUE`, as helm --set (repeatable)", helmSet(false))
	p.repeated("helm-set-string", "a Helm string parameter, `NAME=VALUE`, as helm --set-string (repeatable)", helmSet(true))
	p.repeated("helm-set-file", "a Helm parameter from a file of the repository, `NAME=PATH`, as helm --set-file (repeatable)", func(v string) sourceEdit {
		return func(s *appspec.Source) error {
			name, path, err := keyValue(v)
			if err != nil {
				return err
			}
			h := helm(s)
			h.FileParameters = upsert(h.FileParameters, appspec.HelmFileParameter{Name: name, Path: path},
				func(p appspec.HelmFileParameter) string { return p.Name })
			return nil
		}
	})
	p.repeated("values", "a Helm values `FILE`, relative to the chart or $ref/path (repeatable; added to the list)", func(v string) sourceEdit {
		return func(s *appspec.Source) error {
			h := helm(s)
			if !slices.Contains(h.ValueFiles, v) {
				h.ValueFiles = append(h.ValueFiles, v)
			}
			return nil
		}
	})
	p.repeated("release-name", "the Helm release `NAME`", func(v string) sourceEdit {
		return func(s *appspec.Source) error { helm(s).ReleaseName = v; return nil }
	})
	p.repeated("kustomize-image", "a Kustomize `IMAGE` override, [NAME=]NEWNAME[:TAG][@DIGEST] (repeatable)", func(v string) sourceEdit {
		return func(s *appspec.Source) error {
			k := kustomize(s)
			k.Images = upsert(k.Images, v, imageName)
			return nil
		}
	})
	p.repeated("kustomize-replica", "a Kustomize replica count, `NAME=COUNT` (repeatable)", func(v string) sourceEdit {
		return func(s *appspec.Source) error {
			name, count, err := keyValue(v)
			if err != nil {
				return err
			}
			n, err := strconv.ParseInt(count, 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("%q: the count is not a whole number", v)
			}
			k := kustomize(s)
			k.Replicas = upsert(k.Replicas, appspec.KustomizeReplica{Name: name, Count: n},
				func(r appspec.KustomizeReplica) string { return r.Name })
			return nil
		}
	})
	p.repeated("nameprefix", "the Kustomize name `PREFIX`", func(v string) sourceEdit {
		return func(s *appspec.Source) error { kustomize(s).NamePrefix = v; return nil }
	})
	p.repeated("namesuffix", "the Kustomize name `SUFFIX`", func(v string) sourceEdit {
		return func(s *appspec.Source) error { kustomize(s).NameSuffix = v; return nil }
	})
	jsonnetSet := func(tla, code bool) func(v string) sourceEdit {
		return func(v string) sourceEdit {
			return func(s *appspec.Source) error {
				name, value, err := keyValue(v)
				if err != nil {
					return err
				}
				vars := jsonnetVars(s, tla)
				*vars = upsert(*vars, appspec.JsonnetVar{Name: name, Value: value, Code: code}, func(v appspec.JsonnetVar) string { return v.Name })
				return nil
			}
		}
	}
	p.repeated("jsonnet-tla-str", "a Jsonnet top-level argument, `NAME=VALUE`, a string (repeatable)", jsonnetSet(true, false))
	p.repeated("jsonnet-tla-code", "a Jsonnet top-level argument, `NAME=CODE` (repeatable)", jsonnetSet(true, true))
	p.repeated("jsonnet-ext-var-str", "a Jsonnet external variable, `NAME=VALUE`, a string (repeatable)", jsonnetSet(false, false))
	p.repeated("jsonnet-ext-var-code", "a Jsonnet external variable, `NAME=CODE` (repeatable)", jsonnetSet(false, true))
	p.repeated("directory-recurse", "whether to read the manifests of the subdirectories too, `true|false`", func(v string) sourceEdit {
		return func(s *appspec.Source) error {
			on, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("%q: want true or false", v)
			}
			directory(s).Recurse = on
			return nil
		}
	})
	p.repeated("directory-include", "a `GLOB` of the manifests to read, e.g. '{*.yaml,*.json}'", func(v string) sourceEdit {
		return func(s *appspec.Source) error { directory(s).Include = v; return nil }
	})
	p.repeated("directory-exclude", "a `GLOB` of the manifests to leave out", func(v string) sourceEdit {
		return func(s *appspec.Source) error { directory(s).Exclude = v; return nil }
	})
	p.repeated("plugin-env", "an environment variable of the plugin, `NAME=VALUE` (repeatable)", func(v string) sourceEdit {
		return func(s *appspec.Source) error {
			name, value, err := keyValue(v)
			if err != nil {
				return err
			}
			pl := plugin(s)
			pl.Env = upsert(pl.Env, appspec.EnvVar{Name: name, Value: value}, func(e appspec.EnvVar) string { return e.Name })
			return nil
		}
	})
	return p
}

// withUnsetParams adds the flags of app unset, each removing what the
// flag of app set of the same name sets.
func (f *flags) withUnsetParams() *paramFlags {
	p := &paramFlags{f: f}
	helmUnset := func(name string) sourceEdit {
		return func(s *appspec.Source) error {
			if s.Helm != nil {
				s.Helm.Parameters = remove(s.Helm.Parameters, name, func(p appspec.HelmParameter) string { return p.Name })
			}
			return nil
		}
	}
	p.repeated("p", "remove the Helm parameter `NAME` (repeatable)", helmUnset)
	p.repeated("parameter", "the same as -p", helmUnset)
	p.repeated("helm-set-file", "remove the Helm file parameter `NAME` (repeatable)", func(name string) sourceEdit {
		return func(s *appspec.Source) error {
			if s.Helm != nil {
				s.Helm.FileParameters = remove(s.Helm.FileParameters, name, func(p appspec.HelmFileParameter) string { return p.Name })
			}
			return nil
		}
	})
	p.repeated("values", "remove the Helm values file `FILE` (repeatable)", func(file string) sourceEdit {
		return func(s *appspec.Source) error {
			if s.Helm != nil {
				s.Helm.ValueFiles = remove(s.Helm.ValueFiles, file, func(v string) string { return v })
			}
			return nil
		}
	})
	p.boolean("values-literal", "remove the inline Helm values", func(s *appspec.Source) error {
		if s.Helm != nil {
			s.Helm.Values, s.Helm.ValuesObject = "", nil
		}
		return nil
	})
	p.boolean("release-name", "remove the Helm release name (the application's name again)", func(s *appspec.Source) error {
		if s.Helm != nil {
			s.Helm.ReleaseName = ""
		}
		return nil
	})
	p.repeated("kustomize-image", "remove the Kustomize image override of `NAME` (repeatable)", func(name string) sourceEdit {
		return func(s *appspec.Source) error {
			if s.Kustomize != nil {
				s.Kustomize.Images = remove(s.Kustomize.Images, imageName(name), imageName)
			}
			return nil
		}
	})
	p.repeated("kustomize-replica", "remove the Kustomize replica count of `NAME` (repeatable)", func(name string) sourceEdit {
		return func(s *appspec.Source) error {
			if s.Kustomize != nil {
				s.Kustomize.Replicas = remove(s.Kustomize.Replicas, name, func(r appspec.KustomizeReplica) string { return r.Name })
			}
			return nil
		}
	})
	p.boolean("nameprefix", "remove the Kustomize name prefix", func(s *appspec.Source) error {
		if s.Kustomize != nil {
			s.Kustomize.NamePrefix = ""
		}
		return nil
	})
	p.boolean("namesuffix", "remove the Kustomize name suffix", func(s *appspec.Source) error {
		if s.Kustomize != nil {
			s.Kustomize.NameSuffix = ""
		}
		return nil
	})
	jsonnetUnset := func(tla bool) func(name string) sourceEdit {
		return func(name string) sourceEdit {
			return func(s *appspec.Source) error {
				if s.Directory != nil && s.Directory.Jsonnet != nil {
					vars := jsonnetVars(s, tla)
					*vars = remove(*vars, name, func(v appspec.JsonnetVar) string { return v.Name })
				}
				return nil
			}
		}
	}
	p.repeated("jsonnet-tla", "remove the Jsonnet top-level argument `NAME` (repeatable)", jsonnetUnset(true))
	p.repeated("jsonnet-ext-var", "remove the Jsonnet external variable `NAME` (repeatable)", jsonnetUnset(false))
	for _, d := range []struct {
		name  string
		field func(*appspec.Directory)
	}{
		{"directory-recurse", func(d *appspec.Directory) { d.Recurse = false }},
		{"directory-include", func(d *appspec.Directory) { d.Include = "" }},
		{"directory-exclude", func(d *appspec.Directory) { d.Exclude = "" }},
	} {
		p.boolean(d.name, "remove the directory option "+strings.TrimPrefix(d.name, "directory-"), func(s *appspec.Source) error {
			if s.Directory != nil {
				d.field(s.Directory)
			}
			return nil
		})
	}
	p.repeated("plugin-env", "remove the plugin's environment variable `NAME` (repeatable)", func(name string) sourceEdit {
		return func(s *appspec.Source) error {
			if s.Plugin != nil {
				s.Plugin.Env = remove(s.Plugin.Env, name, func(e appspec.EnvVar) string { return e.Name })
			}
			return nil
		}
	})
	return p
}

// apply runs the edits on src.
func (p *paramFlags) apply(src *appspec.Source) error {
	for _, e := range p.edits {
		if err := e(src); err != nil {
			return fmt.Errorf("%w: %s: %w", cmdline.ErrUsage, p.f.name, err)
		}
	}
	return nil
}

func helm(s *appspec.Source) *appspec.Helm {
	if s.Helm == nil {
		s.Helm = &appspec.Helm{}
	}
	return s.Helm
}

func kustomize(s *appspec.Source) *appspec.Kustomize {
	if s.Kustomize == nil {
		s.Kustomize = &appspec.Kustomize{}
	}
	return s.Kustomize
}

func directory(s *appspec.Source) *appspec.Directory {
	if s.Directory == nil {
		s.Directory = &appspec.Directory{}
	}
	return s.Directory
}

func plugin(s *appspec.Source) *appspec.Plugin {
	if s.Plugin == nil {
		s.Plugin = &appspec.Plugin{}
	}
	return s.Plugin
}

// jsonnetVars are the top-level arguments (tla) or external variables
// of the source's Jsonnet options.
func jsonnetVars(s *appspec.Source, tla bool) *[]appspec.JsonnetVar {
	d := directory(s)
	if d.Jsonnet == nil {
		d.Jsonnet = &appspec.Jsonnet{}
	}
	if tla {
		return &d.Jsonnet.TLAs
	}
	return &d.Jsonnet.ExtVars
}

// keyValue splits NAME=VALUE.
func keyValue(s string) (string, string, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return "", "", fmt.Errorf("%q: want NAME=VALUE", s)
	}
	return k, v, nil
}

// upsert replaces the item of the list with the key of it, or appends it.
func upsert[T any](list []T, it T, key func(T) string) []T {
	for i := range list {
		if key(list[i]) == key(it) {
			list[i] = it
			return list
		}
	}
	return append(list, it)
}

// remove drops the items of the list with the key k.
func remove[T any](list []T, k string, key func(T) string) []T {
	return slices.DeleteFunc(list, func(it T) bool { return key(it) == k })
}

// imageName is the image a Kustomize override applies to: NAME of
// NAME=NEWNAME..., else the image without its tag and digest.
func imageName(override string) string {
	if name, _, ok := strings.Cut(override, "="); ok {
		return name
	}
	name, _, _ := strings.Cut(override, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	return name
}

// paramsTable lists the tools' parameters of the sources, each under the
// flag of app set that sets it.
func paramsTable(w io.Writer, sources []appspec.Source) {
	type row struct{ source, flag, name, value string }
	var rows []row
	for i, s := range sources {
		add := func(flag, name, value string) {
			rows = append(rows, row{strconv.Itoa(i + 1), flag, name, value})
		}
		if h := s.Helm; h != nil {
			if h.ReleaseName != "" {
				add("release-name", "", h.ReleaseName)
			}
			for _, f := range h.ValueFiles {
				add("values", "", f)
			}
			if h.Values != "" || len(h.ValuesObject) > 0 {
				add("(inline values)", "", "-o yaml shows them")
			}
			for _, p := range h.Parameters {
				flag := "helm-set"
				if p.ForceString {
					flag = "helm-set-string"
				}
				add(flag, p.Name, p.Value)
			}
			for _, p := range h.FileParameters {
				add("helm-set-file", p.Name, p.Path)
			}
		}
		if k := s.Kustomize; k != nil {
			for flag, v := range map[string]string{"nameprefix": k.NamePrefix, "namesuffix": k.NameSuffix} {
				if v != "" {
					add(flag, "", v)
				}
			}
			for _, img := range k.Images {
				add("kustomize-image", imageName(img), img)
			}
			for _, r := range k.Replicas {
				add("kustomize-replica", r.Name, strconv.FormatInt(r.Count, 10))
			}
		}
		if d := s.Directory; d != nil {
			if d.Recurse {
				add("directory-recurse", "", "true")
			}
			if d.Include != "" {
				add("directory-include", "", d.Include)
			}
			if d.Exclude != "" {
				add("directory-exclude", "", d.Exclude)
			}
			if j := d.Jsonnet; j != nil {
				for _, v := range j.TLAs {
					add(jsonnetFlag("jsonnet-tla", v), v.Name, v.Value)
				}
				for _, v := range j.ExtVars {
					add(jsonnetFlag("jsonnet-ext-var", v), v.Name, v.Value)
				}
			}
		}
		if p := s.Plugin; p != nil {
			for _, e := range p.Env {
				add("plugin-env", e.Name, e.Value)
			}
		}
	}
	slices.SortStableFunc(rows, func(a, b row) int {
		if a.source != b.source {
			return strings.Compare(a.source, b.source)
		}
		return strings.Compare(a.flag, b.flag)
	})
	table(w, "SOURCE\tFLAG\tNAME\tVALUE", rows, func(r row) []string {
		if !strings.HasPrefix(r.flag, "(") {
			r.flag = "--" + r.flag
		}
		return []string{r.source, r.flag, r.name, r.value}
	})
}

func jsonnetFlag(prefix string, v appspec.JsonnetVar) string {
	if v.Code {
		return prefix + "-code"
	}
	return prefix + "-str"
}
