package api_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"

	"github.com/oncecall/oncecall/api"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/dashatool"
	"github.com/oncecall/oncecall/internal/metrics"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// TestOpenAPIDescribesEveryRoute walks the chi router with every optional
// route on (serve always enables /metrics): a route missing from
// openapi.yaml fails, and so does an operation in openapi.yaml that the
// router lacks.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	t.Parallel()
	router := api.NewRouter(api.Config{
		Ops: app.Operations(), Metrics: metrics.New(metrics.Config{}), OperatorToken: "walk", StripeWebhookSecret: "walk",
		TwilioAuthToken: "walk",
	}).(chi.Routes)
	served := map[string]bool{}
	err := chi.Walk(router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		served[method+" "+route] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for path, item := range apptest.Spec(t).Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	for _, r := range sortedKeys(served) {
		if !documented[r] {
			t.Errorf("route %s is served but not in openapi.yaml", r)
		}
	}
	for _, r := range sortedKeys(documented) {
		if !served[r] {
			t.Errorf("openapi.yaml documents %s, which the router does not serve", r)
		}
	}
	if len(served) < 20 {
		t.Fatalf("walked only %d routes: %v", len(served), sortedKeys(served))
	}
}

// TestOpenAPIRequestBodiesAreTheOperationSchemas holds each write's request
// body in openapi.yaml to the input schema its operation declares
// (op.Schema), less the fields that come from the URL, so that the two
// cannot drift. Each operation of the registry has exactly one route.
func TestOpenAPIRequestBodiesAreTheOperationSchemas(t *testing.T) {
	t.Parallel()
	ops := app.Operations()
	seen := map[string]string{}
	for path, item := range apptest.Spec(t).Paths.Map() {
		for method, o := range item.Operations() {
			name, _ := o.Extensions["x-oncecall-operation"].(string)
			if name == "" {
				continue
			}
			where := method + " " + path
			if prev, dup := seen[name]; dup {
				t.Errorf("%s is documented twice: %s and %s", name, prev, where)
			}
			seen[name] = where
			operation, ok := ops.Get(name)
			if !ok {
				t.Errorf("%s names operation %q, which the registry lacks", where, name)
				continue
			}
			if o.RequestBody == nil || o.RequestBody.Value == nil {
				t.Errorf("%s has no request body", where)
				continue
			}
			want := inOpenAPI30(op.Schema(operation))
			props, _ := want["properties"].(map[string]any)
			for _, p := range o.Parameters {
				if p.Value.In != openapi3.ParameterInPath {
					continue
				}
				if _, ok := props[p.Value.Name]; !ok {
					t.Errorf("%s: path parameter %s is not an input field of %s", where, p.Value.Name, name)
				}
				delete(props, p.Value.Name)
				required, _ := want["required"].([]any)
				want["required"] = slices.DeleteFunc(required, func(f any) bool { return f == p.Value.Name })
			}
			for mediaType, content := range o.RequestBody.Value.Content {
				got := plain(t, content.Schema.Value)
				delete(got, "description") // says where the other fields come from
				if !reflect.DeepEqual(normalized(got), normalized(want)) {
					g, _ := json.MarshalIndent(normalized(got), "", "  ")
					w, _ := json.MarshalIndent(normalized(want), "", "  ")
					t.Errorf("%s %s: the request body schema is not %s's input schema\nopenapi.yaml:\n%s\nop.Schema:\n%s", where, mediaType, name, g, w)
				}
			}
		}
	}
	for _, o := range ops.All() {
		if _, ok := seen[o.Name()]; !ok {
			t.Errorf("operation %s has no route in openapi.yaml (x-oncecall-operation)", o.Name())
		}
	}
}

// TestOpenAPIEnumsAreComplete checks the enums of openapi.yaml against the
// code: problem codes (fault codes and every operation's rejection
// reasons), Dasha answer reasons, operation names and tool names.
func TestOpenAPIEnumsAreComplete(t *testing.T) {
	t.Parallel()
	doc := apptest.Spec(t)
	enum := func(schema string) []string {
		s := doc.Components.Schemas[schema]
		if s == nil {
			t.Fatalf("openapi.yaml has no schema %s", schema)
		}
		var out []string
		for _, v := range s.Value.Enum {
			out = append(out, v.(string))
		}
		sort.Strings(out)
		return out
	}
	faults := stringConsts(t, "../internal/fault", func(spec *ast.ValueSpec, _ *ast.GenDecl) bool {
		id, ok := spec.Type.(*ast.Ident)
		return ok && id.Name == "Code"
	})
	reasons := stringConsts(t, "../internal/*", func(_ *ast.ValueSpec, d *ast.GenDecl) bool {
		return d.Doc != nil && strings.HasPrefix(d.Doc.Text(), "Rejection reasons")
	})
	if len(faults) < 10 || len(reasons) < 10 {
		t.Fatalf("found %d fault codes and %d rejection reasons in the code: the scan is broken", len(faults), len(reasons))
	}
	sameSet(t, "ProblemCode", enum("ProblemCode"), append(slices.Clone(faults), reasons...))

	dasha := []string{dashatool.InvalidArguments, dashatool.ConflictingRequest, dashatool.UnknownAction, dashatool.NeedsOperator,
		dashatool.NeedsCallerConfirmation}
	for _, r := range reasons {
		dasha = append(dasha, strings.ToLower(r))
	}
	sameSet(t, "DashaReason", enum("DashaReason"), dasha)

	var names []string
	tools := []string{dashatool.CheckActionStatus, dashatool.FindAvailableSlots, dashatool.FindCustomer, dashatool.GetCustomer, dashatool.ListAppointments,
		dashatool.ListPaymentIntents, dashatool.ListServices, dashatool.ListPractitioners}
	for _, o := range app.Operations().All() {
		names = append(names, o.Name())
		if o.Tool() != "" {
			tools = append(tools, o.Tool())
		}
	}
	sameSet(t, "OperationName", enum("OperationName"), names)
	sameSet(t, "ToolName", enum("ToolName"), tools)
}

// stringConsts returns the values of the string constants declared in the
// non-test Go files of the packages matching dir that keep reports true.
func stringConsts(t *testing.T, dir string, keep func(*ast.ValueSpec, *ast.GenDecl) bool) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			d, ok := decl.(*ast.GenDecl)
			if !ok || d.Tok != token.CONST {
				continue
			}
			for _, s := range d.Specs {
				spec := s.(*ast.ValueSpec)
				if !keep(spec, d) {
					continue
				}
				for _, v := range spec.Values {
					if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						s, _ := strconv.Unquote(lit.Value)
						out = append(out, s)
					}
				}
			}
		}
	}
	return out
}

func sameSet(t *testing.T, what string, documented, inCode []string) {
	t.Helper()
	doc, code := map[string]bool{}, map[string]bool{}
	for _, v := range documented {
		doc[v] = true
	}
	for _, v := range inCode {
		code[v] = true
	}
	for _, v := range sortedKeys(code) {
		if !doc[v] {
			t.Errorf("%s: %q is in the code but not in openapi.yaml", what, v)
		}
	}
	for _, v := range sortedKeys(doc) {
		if !code[v] {
			t.Errorf("%s: openapi.yaml lists %q, which the code does not have", what, v)
		}
	}
}

// inOpenAPI30 rewrites a JSON Schema from op.Schema in OpenAPI 3.0's
// dialect, which spells a nullable type with nullable: true.
func inOpenAPI30(s map[string]any) map[string]any {
	var v any
	b, _ := json.Marshal(s)
	_ = json.Unmarshal(b, &v)
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if types, ok := x["type"].([]any); ok {
				var rest []any
				for _, t := range types {
					if t == "null" {
						x["nullable"] = true
					} else {
						rest = append(rest, t)
					}
				}
				if len(rest) == 1 {
					x["type"] = rest[0]
				} else {
					x["type"] = rest
				}
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(v)
	return v.(map[string]any)
}

// plain is a kin-openapi schema as JSON values, references resolved.
func plain(t *testing.T, s *openapi3.Schema) map[string]any {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// normalized drops what does not change a schema's meaning: empty
// properties and required lists, the order of required, and the Go
// client generator's hints (x-go-type-skip-optional-pointer, x-omitzero).
func normalized(s map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range s {
		switch k {
		case "properties":
			props := map[string]any{}
			for name, p := range v.(map[string]any) {
				props[name] = normalized(p.(map[string]any))
			}
			if len(props) > 0 {
				out[k] = props
			}
		case "required":
			var req []string
			for _, r := range v.([]any) {
				req = append(req, r.(string))
			}
			sort.Strings(req)
			if len(req) > 0 {
				out[k] = req
			}
		case "additionalProperties":
			if m, ok := v.(map[string]any); ok {
				out[k] = normalized(m)
			} else {
				out[k] = v
			}
		case "x-go-type-skip-optional-pointer", "x-omitzero":
		default:
			out[k] = v
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
