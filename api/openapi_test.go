package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/windlass-cd/windlass/activities/depends"

	"go.temporal.io/sdk/client"
	"golang.org/x/crypto/bcrypt"

	"github.com/windlass-cd/windlass/activities/appsets"
	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/api/auth"
	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/internal/actions"
	"github.com/windlass-cd/windlass/internal/appset"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/customizations"
	"github.com/windlass-cd/windlass/internal/gpgkey"
	"github.com/windlass-cd/windlass/internal/healthlog"
	"github.com/windlass-cd/windlass/internal/lastknown"
	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/workflows"
)

// openAPIMethods are the operation keys of an OpenAPI path item.
var openAPIMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// openAPIDoc decodes the embedded OpenAPI document.
func openAPIDoc(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(openAPIDocument))
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("openapi.json is not valid JSON: %v", err)
	}
	if dec.More() {
		t.Fatal("openapi.json has data after the document")
	}
	return doc
}

// openAPIOperation is one documented operation.
type openAPIOperation struct {
	method, path string
	op           map[string]any
	// pathParams are the parameters of the path item, inherited by op.
	pathParams []any
}

// openAPIOperations lists the document's operations.
func openAPIOperations(t *testing.T, doc map[string]any) []openAPIOperation {
	t.Helper()
	paths, ok := doc["paths"].(map[string]any)
	if !ok || len(paths) == 0 {
		t.Fatal("the document has no paths")
	}
	var out []openAPIOperation
	for path, v := range paths {
		item, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("path %s is not an object", path)
		}
		params, _ := item["parameters"].([]any)
		for _, m := range openAPIMethods {
			if op, ok := item[m].(map[string]any); ok {
				out = append(out, openAPIOperation{method: strings.ToUpper(m), path: path, op: op, pathParams: params})
			}
		}
	}
	return out
}

// resolvePointer resolves a local reference ("#/components/...") in doc.
func resolvePointer(doc any, ref string) (any, error) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, fmt.Errorf("%q is not a reference inside the document", ref)
	}
	if frag == "" {
		return doc, nil
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, fmt.Errorf("%q is not a JSON pointer", ref)
	}
	cur := doc
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[tok]
			if !ok {
				return nil, fmt.Errorf("%q: no %q", ref, tok)
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil, fmt.Errorf("%q: no index %q", ref, tok)
			}
			cur = v[i]
		default:
			return nil, fmt.Errorf("%q: cannot descend into %T at %q", ref, cur, tok)
		}
	}
	return cur, nil
}

// deref follows v's $ref, if it has one (and the target's, in turn).
func deref(t *testing.T, doc map[string]any, v any) map[string]any {
	t.Helper()
	for range 10 {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%v is not an object", v)
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		target, err := resolvePointer(doc, ref)
		if err != nil {
			t.Fatal(err)
		}
		v = target
	}
	t.Fatalf("reference cycle at %v", v)
	return nil
}

// collectRefs returns every $ref in v with where it is.
func collectRefs(v any, at string, out map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if ref, ok := child.(string); ok && k == "$ref" {
				out[at] = ref
				continue
			}
			collectRefs(child, at+"/"+k, out)
		}
	case []any:
		for i, child := range v {
			collectRefs(child, at+"/"+strconv.Itoa(i), out)
		}
	}
}

func TestOpenAPIDocument(t *testing.T) {
	doc := openAPIDoc(t)
	if v, _ := doc["openapi"].(string); !regexp.MustCompile(`^3\.1\.\d+$`).MatchString(v) {
		t.Errorf("openapi = %q, want 3.1.x", v)
	}
	info, _ := doc["info"].(map[string]any)
	if info["title"] == nil || info["version"] == nil {
		t.Errorf("info needs a title and a version: %v", info)
	}

	refs := map[string]string{}
	collectRefs(doc, "#", refs)
	if len(refs) == 0 {
		t.Fatal("the document has no $ref")
	}
	for at, ref := range refs {
		if _, err := resolvePointer(doc, ref); err != nil {
			t.Errorf("$ref at %s: %v", at, err)
		}
	}
	// Every component is used (a schema only listed would be a stale
	// leftover).
	used := map[string]bool{}
	for _, ref := range refs {
		used[ref] = true
	}
	components, _ := doc["components"].(map[string]any)
	for _, kind := range []string{"schemas", "parameters", "responses", "requestBodies"} {
		group, _ := components[kind].(map[string]any)
		for name := range group {
			if ref := "#/components/" + kind + "/" + name; !used[ref] {
				t.Errorf("%s is never referenced", ref)
			}
		}
	}

	// Security: bearer (JWT) and the session cookie, required globally.
	schemes, _ := components["securitySchemes"].(map[string]any)
	bearer, _ := schemes["bearerAuth"].(map[string]any)
	if bearer["type"] != "http" || bearer["scheme"] != "bearer" || bearer["bearerFormat"] != "JWT" {
		t.Errorf("bearerAuth = %v, want an http bearer JWT scheme", bearer)
	}
	cookie, _ := schemes["cookieAuth"].(map[string]any)
	if cookie["type"] != "apiKey" || cookie["in"] != "cookie" || cookie["name"] != auth.TokenCookie {
		t.Errorf("cookieAuth = %v, want the cookie %s", cookie, auth.TokenCookie)
	}
	global, _ := doc["security"].([]any)
	var globalSchemes []string
	for _, req := range global {
		for name := range req.(map[string]any) {
			globalSchemes = append(globalSchemes, name)
		}
	}
	slices.Sort(globalSchemes)
	if !slices.Equal(globalSchemes, []string{"bearerAuth", "cookieAuth"}) {
		t.Errorf("global security names %v, want bearerAuth and cookieAuth", globalSchemes)
	}

	// Operations: unique IDs, responses, path parameters that match the
	// template, and exactly the public routes without security.
	public := map[string]bool{}
	for _, r := range publicRoutes {
		method, route, _ := strings.Cut(r, " ")
		public[method+" "+openAPIPath(route)] = true
	}
	ids := map[string]string{}
	templateParam := regexp.MustCompile(`\{([^}]+)\}`)
	for _, o := range openAPIOperations(t, doc) {
		key := o.method + " " + o.path
		id, _ := o.op["operationId"].(string)
		if id == "" {
			t.Errorf("%s has no operationId", key)
		} else if other, dup := ids[id]; dup {
			t.Errorf("operationId %s is used by %s and %s", id, other, key)
		}
		ids[id] = key
		if res, _ := o.op["responses"].(map[string]any); len(res) == 0 {
			t.Errorf("%s documents no response", key)
		}
		var want, got []string
		for _, m := range templateParam.FindAllStringSubmatch(o.path, -1) {
			want = append(want, m[1])
		}
		opParams, _ := o.op["parameters"].([]any)
		for _, p := range append(slices.Clone(o.pathParams), opParams...) {
			if p := deref(t, doc, p); p["in"] == "path" {
				got = append(got, p["name"].(string))
				if p["required"] != true {
					t.Errorf("%s: path parameter %s must be required", key, p["name"])
				}
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(want, got) {
			t.Errorf("%s: path parameters %v, want %v", key, got, want)
		}
		sec, hasSec := o.op["security"].([]any)
		isPublic := hasSec && len(sec) == 0
		if isPublic != public[key] {
			t.Errorf("%s: public in the document = %v, in publicRoutes = %v", key, isPublic, public[key])
		}
	}

	// Applications and projects take Windlass or Argo CD, JSON or YAML.
	for _, path := range []string{"/api/v1/applications", "/api/v1/projects"} {
		item, _ := doc["paths"].(map[string]any)[path].(map[string]any)
		post, _ := item["post"].(map[string]any)
		if post["requestBody"] == nil {
			t.Errorf("POST %s has no request body", path)
			continue
		}
		content, _ := deref(t, doc, post["requestBody"])["content"].(map[string]any)
		for _, ct := range []string{"application/json", "application/yaml"} {
			if content[ct] == nil {
				t.Errorf("POST %s does not accept %s", path, ct)
			}
		}
		body, _ := json.Marshal(deref(t, doc, content["application/json"].(map[string]any)["schema"]))
		if !bytes.Contains(body, []byte("ArgoCD")) {
			t.Errorf("POST %s: the request body schema does not offer the Argo CD form: %s", path, body)
		}
	}
	for _, name := range []string{"ArgoCDApplication", "ArgoCDAppProject"} {
		s := deref(t, doc, map[string]any{"$ref": "#/components/schemas/" + name})
		props, _ := s["properties"].(map[string]any)
		if v, _ := props["apiVersion"].(map[string]any); v["const"] != "argoproj.io/v1alpha1" {
			t.Errorf("%s.apiVersion = %v, want const argoproj.io/v1alpha1", name, v)
		}
	}
}

// openAPIPath turns an Echo route ("/a/:name") into an OpenAPI path
// template ("/a/{name}").
func openAPIPath(route string) string {
	segs := strings.Split(route, "/")
	for i, s := range segs {
		if p, ok := strings.CutPrefix(s, ":"); ok {
			segs[i] = "{" + p + "}"
		}
	}
	return strings.Join(segs, "/")
}

func TestOpenAPIPath(t *testing.T) {
	for in, want := range map[string]string{
		"/healthz": "/healthz",
		"/api/v1/projects/:project/roles/:role/tokens/:id": "/api/v1/projects/{project}/roles/{role}/tokens/{id}",
	} {
		if got := openAPIPath(in); got != want {
			t.Errorf("openAPIPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// openAPINoRevocations is a revocation store for servers that serve no
// authenticated request.
type openAPINoRevocations struct{}

func (openAPINoRevocations) Revoke(context.Context, string, time.Time) error       { return nil }
func (openAPINoRevocations) Revoked(context.Context, string, string) (bool, error) { return false, nil }
func (openAPINoRevocations) Generation(context.Context) (string, error)            { return "g", nil }

// newOpenAPITestServer builds the API on a Temporal client that never
// connects: enough to list its routes and answer what needs no workflow.
func newOpenAPITestServer(t *testing.T) *Server {
	t.Helper()
	c, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	secrets := &secretstore.Memory{}
	st, err := settings.New(secrets)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	authSvc, err := auth.New(auth.Config{BcryptCost: bcrypt.MinCost}, secrets, openAPINoRevocations{}, log)
	if err != nil {
		t.Fatal(err)
	}
	enf, err := rbac.New(rbac.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(c, Options{Logger: log, Auth: authSvc, RBAC: enf, Settings: st})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestOpenAPIRoutes checks that the document describes exactly the routes
// the server registers.
func TestOpenAPIRoutes(t *testing.T) {
	s := newOpenAPITestServer(t)
	registered := map[string]bool{}
	for _, r := range s.e.Router().Routes() {
		if strings.Contains(r.Path, "*") {
			t.Errorf("route %s %s: wildcard routes cannot be documented as a path template", r.Method, r.Path)
		}
		registered[r.Method+" "+openAPIPath(r.Path)] = true
	}
	if len(registered) < 10 {
		t.Fatalf("only %d routes registered: %v", len(registered), registered)
	}
	documented := map[string]bool{}
	for _, o := range openAPIOperations(t, openAPIDoc(t)) {
		documented[o.method+" "+o.path] = true
	}
	for _, key := range slices.Sorted(maps.Keys(registered)) {
		if !documented[key] {
			t.Errorf("route %s is not documented in openapi.json", key)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(documented)) {
		if !registered[key] {
			t.Errorf("openapi.json documents %s, which the server does not register", key)
		}
	}
}

// TestOpenAPIServedPublicly fetches the document without a token.
func TestOpenAPIServedPublicly(t *testing.T) {
	s := newOpenAPITestServer(t)
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, path, nil))
		return rec
	}
	rec := get("/api/v1/openapi.json")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /api/v1/openapi.json without a token: %d %s", rec.Code, rec.Body)
	}
	if ct, _, _ := mime.ParseMediaType(rec.Header().Get("Content-Type")); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", rec.Header().Get("Content-Type"))
	}
	if cc := rec.Header().Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("Cache-Control = %q, want no-cache", cc)
	}
	if !bytes.Equal(rec.Body.Bytes(), openAPIDocument) {
		t.Error("the body is not the embedded document")
	}
	// The middleware is on: a protected route still wants a token.
	if rec := get("/api/v1/applications"); rec.Code != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/applications without a token: %d, want 401", rec.Code)
	}
}

// openAPISchemaTypes maps component schemas to the Go types they describe.
var openAPISchemaTypes = map[string]any{
	"ResourceAction":            actions.Action{},
	"ResourceActionParam":       actions.Param{},
	"ActionsView":               ActionsView{},
	"RunActionRequest":          RunActionRequest{},
	"ActionChange":              cluster.ActionChange{},
	"RunActionView":             RunActionView{},
	"CustomizationsView":        CustomizationsView{},
	"NotificationsConfig":       NotificationsConfig{},
	"NotificationsView":         NotificationsView{},
	"NotificationsSecretPatch":  NotificationsSecretPatch{},
	"NotificationsSecretView":   NotificationsSecretView{},
	"NotificationService":       NotificationService{},
	"NotificationRecord":        workflows.NotificationRecord{},
	"CustomizationsStatus":      customizations.WorkerStatus{},
	"CustomizationsSource":      settings.CustomizationsSource{},
	"Problem":                   Problem{},
	"LogLine":                   LogLine{},
	"Application":               appspec.Application{},
	"InfoItem":                  appspec.InfoItem{},
	"Source":                    appspec.Source{},
	"Directory":                 appspec.Directory{},
	"JsonnetVar":                appspec.JsonnetVar{},
	"Helm":                      appspec.Helm{},
	"Kustomize":                 appspec.Kustomize{},
	"Plugin":                    appspec.Plugin{},
	"Destination":               appspec.Destination{},
	"SyncPolicy":                appspec.SyncPolicy{},
	"ManagedNamespaceMetadata":  appspec.ManagedNamespaceMetadata{},
	"ResourceIgnoreDifferences": appspec.ResourceIgnoreDifferences{},
	"ResourceKey":               appspec.ResourceKey{},
	"ResourceStatus":            appspec.ResourceStatus{},
	"HealthHistory":             healthHistoryView{},
	"HealthTransition":          healthlog.Transition{},
	"ResourceResult":            cluster.ResourceResult{},
	"Step":                      cluster.Step{},
	"Operation":                 workflows.Operation{},
	"Event":                     workflows.Event{},
	"AppStatus":                 workflows.AppStatus{},
	"SourceRequest":             render.SourceRequest{},
	"RevisionMetadata":          appspec.RevisionMetadata{},
	"SyncSummary":               workflows.SyncSummary{},
	"SyncResult":                workflows.SyncResult{},
	"AppView":                   appView{},
	"Stale":                     lastknown.Stale{},
	"AppDetail":                 AppDetail{},
	"HistoryView":               workflows.HistoryView{},
	"SyncRequest":               workflows.SyncRequest{},
	"SyncAccepted":              workflows.SyncAccepted{},
	"DependencyWait":            depends.Waiting{},
	"DependencyRef":             appspec.DependencyRef{},
	"RollbackRequest":           rollbackBody{},
	"DeleteResult":              workflows.DeleteResult{},
	"ApprovedDeletion":          ApprovedDeletion{},
	"SyncRecord":                SyncRecord{},
	"SyncList":                  SyncList{},
	"SyncEvents":                SyncEvents{},
	"AppSummary":                AppSummary{},
	"AppList":                   AppList{},
	"Project":                   appspec.Project{},
	"GPGKey":                    gpgkey.Key{},
	"GPGKeyList":                GPGKeyList{},
	"GPGKeyCreate":              GPGKeyCreate{},
	"GroupKind":                 appspec.GroupKind{},
	"SyncWindow":                appspec.SyncWindow{},
	"ProjectRole":               appspec.ProjectRole{},
	"ProjectList":               ProjectList{},
	"TokenRequest":              TokenRequest{},
	"TokenResponse":             TokenResponse{},
	"TokenInfo":                 auth.TokenInfo{},
	"TokenList":                 TokenList{},
	"Repository":                settings.Repository{},
	"RepositoryView":            settings.RepositoryView{},
	"RepoList":                  RepoList{},
	"ClusterRequest":            ClusterRequest{},
	"ClusterView":               settings.ClusterView{},
	"ClusterList":               ClusterList{},
	"AppSetApp":                 appset.App{},
	"AppCondition":              appspec.Condition{},
	"ProjectMove":               workflows.ProjectMove{},
	"AppSetPreview":             AppSetPreview{},
	"AppSetList":                AppSetList{},
	"AppSetSummary":             AppSetSummary{},
	"AppSetChild":               AppSetChild{},
	"AppSetDetail":              AppSetDetail{},
	"AppSetStatus":              workflows.AppSetStatus{},
	"AppSetChange":              appsets.ReconcileOutput{},
	"AppSetDeleteResult":        workflows.AppSetDeleteResult{},
	"RolloutStatus":             workflows.RolloutStatus{},
	"RolloutStepStatus":         workflows.RolloutStepStatus{},
	"RolloutAppStatus":          workflows.RolloutAppStatus{},
	"RolloutControlRequest":     RolloutControlRequest{},
	"Account":                   Account{},
	"AccountList":               AccountList{},
	"PasswordRequest":           PasswordRequest{},
	"ManifestsView":             ManifestsView{},
	"ResourceDiff":              cluster.ResourceDiff{},
	"DiffView":                  DiffView{},
	"ResourceNode":              cluster.ResourceNode{},
	"ResourceTree":              cluster.ResourceTreeOutput{},
	"AppEvent":                  AppEvent{},
	"EventsView":                EventsView{},
	"CheckResult":               CheckResult{},
	"CheckList":                 CheckList{},
	"PolicyView":                rbac.PolicyView{},
}

// openAPILenientInputs are input schemas that do not require every field
// Go always marshals: an application's project and destination have
// defaults, and a cluster may come from a kubeconfig.
var openAPILenientInputs = map[string]bool{"Application": true, "ClusterRequest": true}

// jsonFields lists t's JSON field names (embedded structs flattened) and
// whether each may be left out (omitempty or omitzero).
func jsonFields(t reflect.Type, out map[string]bool) {
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		switch {
		case tag == "-" || !f.IsExported() && !f.Anonymous:
			continue
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			jsonFields(f.Type, out)
			continue
		case name == "":
			name = f.Name
		}
		out[name] = slices.ContainsFunc(strings.Split(opts, ","), func(o string) bool { return o == "omitempty" || o == "omitzero" })
	}
}

// schemaFields lists a schema's properties (through allOf) and which of
// them are required.
func schemaFields(t *testing.T, doc map[string]any, schema map[string]any, props map[string]bool) {
	t.Helper()
	parts, _ := schema["allOf"].([]any)
	for _, part := range parts {
		schemaFields(t, doc, deref(t, doc, part), props)
	}
	own, _ := schema["properties"].(map[string]any)
	for name := range own {
		if _, ok := props[name]; !ok {
			props[name] = false
		}
	}
	req, _ := schema["required"].([]any)
	for _, name := range req {
		props[name.(string)] = true
	}
}

// TestOpenAPISchemasMatchGoTypes checks the component schemas against the
// JSON tags of the Go types: the same property names, and required exactly
// when Go always marshals the field.
func TestOpenAPISchemasMatchGoTypes(t *testing.T) {
	doc := openAPIDoc(t)
	for name, v := range openAPISchemaTypes {
		schema := deref(t, doc, map[string]any{"$ref": "#/components/schemas/" + name})
		props := map[string]bool{} // name → required
		schemaFields(t, doc, schema, props)
		fields := map[string]bool{} // name → may be omitted
		jsonFields(reflect.TypeOf(v), fields)
		for f, omit := range fields {
			required, ok := props[f]
			switch {
			case !ok:
				t.Errorf("%s: the schema lacks %s", name, f)
			case required && omit:
				t.Errorf("%s: %s is required but Go omits it when empty", name, f)
			case !required && !omit && !openAPILenientInputs[name]:
				t.Errorf("%s: %s is always present but not required", name, f)
			}
		}
		for p := range props {
			if _, ok := fields[p]; !ok {
				t.Errorf("%s: the schema has %s, which %T does not", name, p, v)
			}
		}
	}
}
