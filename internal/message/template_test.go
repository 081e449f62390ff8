package message

import (
	"reflect"
	"strings"
	"testing"
)

// TestTemplateEnumMatchesTemplates keeps the schema's list of templates and
// the declared templates in step.
func TestTemplateEnumMatchesTemplates(t *testing.T) {
	t.Parallel()
	f, _ := reflect.TypeFor[SendInput]().FieldByName("Template")
	if got, want := f.Tag.Get("enum"), strings.Join(templateNames(), ","); got != want {
		t.Fatalf("enum tag %q, declared templates %q", got, want)
	}
}

func TestTemplatesRender(t *testing.T) {
	t.Parallel()
	for name, tmpl := range templates {
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
	_, body, _ := templates["generic"].render(map[string]string{"body": "Tom & Jerry's <b>"})
	if body != "Tom & Jerry's <b>" {
		t.Fatalf("generic body = %q", body)
	}
	subject, _, _ := templates["generic"].render(map[string]string{"body": "x", "subject": "Hello"})
	if subject != "Hello" {
		t.Fatalf("generic subject = %q", subject)
	}
}
