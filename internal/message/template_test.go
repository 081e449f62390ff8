package message

import (
	"reflect"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/fault"
)

// TestTemplateDescriptionNamesTheBuiltins keeps the schema's description of
// the template field in step with the built-in templates and their
// variables: a voice agent reads it to know what it can send.
func TestTemplateDescriptionNamesTheBuiltins(t *testing.T) {
	t.Parallel()
	f, _ := reflect.TypeFor[SendInput]().FieldByName("Template")
	desc := f.Tag.Get("desc")
	for _, name := range builtinNames() {
		if !strings.Contains(desc, name) {
			t.Errorf("the template description does not name %s: %q", name, desc)
		}
		for _, v := range append(builtins[name].required, builtins[name].optional...) {
			if !strings.Contains(desc, v) {
				t.Errorf("the template description does not name %s's variable %s", name, v)
			}
		}
	}
	if f.Tag.Get("enum") != "" {
		t.Errorf("the template field has an enum: tenants add their own templates")
	}
}

func TestTemplatesRender(t *testing.T) {
	t.Parallel()
	for name, tmpl := range builtins {
		vars := map[string]string{}
		for _, v := range tmpl.required {
			vars[v] = "<" + v + ">"
		}
		subject, body, err := tmpl.render(vars)
		if err != nil || subject == "" || body == "" {
			t.Errorf("%s: %q %q %v", name, subject, body, err)
		}
		for _, v := range tmpl.required {
			if !strings.Contains(body, "<"+v+">") {
				t.Errorf("%s: body %q does not use %s", name, body, v)
			}
		}
	}
	// text/template must not HTML-escape: this is text for SMS and plain e-mail.
	_, body, _ := builtins["generic"].render(map[string]string{"body": "Tom & Jerry's <b>"})
	if body != "Tom & Jerry's <b>" {
		t.Fatalf("generic body = %q", body)
	}
	subject, _, _ := builtins["generic"].render(map[string]string{"body": "x", "subject": "Hello"})
	if subject != "Hello" {
		t.Fatalf("generic subject = %q", subject)
	}
}

// TestTemplateSyntaxIsRestricted: a tenant's template may insert and test
// declared variables and nothing else; each refusal names the field.
func TestTemplateSyntaxIsRestricted(t *testing.T) {
	t.Parallel()
	declared := []string{"name", "when"}
	ok := []string{
		"Hello {{.name}}",
		"{{if .when}}On {{.when}}{{else}}Soon{{end}}, {{.name}}.",
		"{{/* a comment */}}Plain text",
		"{{- .name -}}",
	}
	for _, body := range ok {
		if _, err := parseTemplate("t", "", body, declared, nil); err != nil {
			t.Errorf("%q refused: %v", body, err)
		}
	}
	bad := map[string]string{
		"Hello {{.nmae}}":                        "not declared",
		"{{.name.first}}":                        "may only use",
		`{{printf "%099999999d" 1}}`:             "may only use",
		"{{range .name}}x{{end}}":                "may only use",
		"{{with .name}}x{{end}}":                 "may only use",
		`{{define "x"}}y{{end}}{{template "x"}}`: "may only use",
		`{{block "x" .}}y{{end}}`:                "may only use",
		"{{$x := .name}}{{$x}}":                  "may only use",
		"{{.name | len}}":                        "may only use",
		"{{call .name}}":                         "may only use",
		"{{.}}":                                  "may only use",
		"Hello {{.name":                          "not a valid template",
		"{{if .name}}open":                       "not a valid template",
		"{{if eq .name \"Ana\"}}hi{{end}}":       "may only use",
		"{{if .name}}{{.nope}}{{end}}":           "not declared",
		"{{if .name}}a{{else}}{{.nope}}{{end}}":  "not declared",
		"{{if .name}}a{{else if .nope}}b{{end}}": "not declared",
	}
	for body, want := range bad {
		_, err := parseTemplate("t", "", body, declared, nil)
		fe := fault.As(err)
		if err == nil || fe.Code != fault.InvalidInput || fe.Field != "body" || !strings.Contains(fe.Message, want) {
			t.Errorf("%q: got %v, want a body error saying %q", body, err, want)
		}
	}
	if _, err := parseTemplate("t", "About {{.topic}}", "x", declared, nil); fault.As(err).Field != "subject" {
		t.Errorf("undeclared variable in the subject: %v", err)
	}
}

func TestTemplateDeclarationsAreNormalised(t *testing.T) {
	t.Parallel()
	in := TemplateInput{
		Name: " welcome ", Subject: " Welcome, {{.name}} ", Body: "Hi {{.name}}{{if .code}}, use {{.code}}{{end}}.",
		Variables: TemplateVariables{Required: []string{"name"}, Optional: []string{" code "}},
	}
	if err := normalizeTemplate(&in); err != nil {
		t.Fatal(err)
	}
	if in.Name != "welcome" || in.Subject != "Welcome, {{.name}}" || in.Variables.Optional[0] != "code" {
		t.Fatalf("normalised to %+v", in)
	}
	empty := TemplateInput{Name: "plain", Body: "Hello"}
	if err := normalizeTemplate(&empty); err != nil || empty.Variables.Required == nil || empty.Variables.Optional == nil {
		t.Fatalf("absent variables: %+v %v", empty, err)
	}
	bad := []struct {
		in    TemplateInput
		field string
	}{
		{TemplateInput{Name: "Welcome", Body: "x"}, "name"},
		{TemplateInput{Name: "", Body: "x"}, "name"},
		{TemplateInput{Name: "w", Body: " "}, "body"},
		{TemplateInput{Name: "w", Body: "x", Subject: "a\nb"}, "subject"},
		{TemplateInput{Name: "w", Body: "{{.a}}", Variables: TemplateVariables{Required: []string{"a", "a"}}}, "variables.required"},
		{TemplateInput{Name: "w", Body: "{{.a}}", Variables: TemplateVariables{Required: []string{"a"}, Optional: []string{"a"}}}, "variables.optional"},
		{TemplateInput{Name: "w", Body: "x", Variables: TemplateVariables{Required: []string{"Bad-Name"}}}, "variables.required"},
		{TemplateInput{Name: "w", Body: "Hi {{.who}}"}, "body"},
		// Overriding a built-in keeps every send that fits the built-in working.
		{TemplateInput{Name: "appointment_reminder", Subject: "R", Body: "Hi {{.name}}", Variables: TemplateVariables{Required: []string{"name"}}}, "variables"},
		{TemplateInput{Name: "appointment_reminder", Subject: "R", Body: "{{.name}} {{.when}} {{.room}}",
			Variables: TemplateVariables{Required: []string{"name", "room", "when"}}}, "variables.required"},
		{TemplateInput{Name: "appointment_reminder", Body: "{{.name}} {{.when}}", Variables: TemplateVariables{Required: []string{"name", "when"}}}, "subject"},
	}
	for _, b := range bad {
		err := normalizeTemplate(&b.in)
		if fe := fault.As(err); err == nil || fe.Field != b.field {
			t.Errorf("%+v: got %v, want an error naming %s", b.in, err, b.field)
		}
	}
	override := TemplateInput{Name: "appointment_reminder", Subject: "See you {{.when}}", Body: "{{.name}}: {{.when}}{{if .room}} in {{.room}}{{end}}",
		Variables: TemplateVariables{Required: []string{"when"}, Optional: []string{"name", "room"}}}
	if err := normalizeTemplate(&override); err != nil {
		t.Fatalf("a compatible override: %v", err)
	}
}
