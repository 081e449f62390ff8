package message

import (
	"fmt"
	"slices"
	"strings"
	"text/template"
)

// A messageTemplate is a message declared in code. Its variables are
// strings the caller supplies; every required one must be given and no
// other is accepted, so a typo is a 400 rather than a message with a hole.
type messageTemplate struct {
	subject  *template.Template // e-mail subject line
	body     *template.Template
	required []string
	optional []string // rendered as "" when absent
}

func declare(name, subject, body string, required, optional []string) *messageTemplate {
	parse := func(part, text string) *template.Template {
		return template.Must(template.New(name + "." + part).Option("missingkey=error").Parse(text))
	}
	return &messageTemplate{subject: parse("subject", subject), body: parse("body", body), required: required, optional: optional}
}

// templates are the messages oncecall can send. Keep the enum tag of
// SendInput.Template in step (a test checks it).
var templates = map[string]*messageTemplate{
	"appointment_confirmation": declare("appointment_confirmation",
		"Your appointment is confirmed",
		"Hello {{.name}}, your appointment on {{.when}} is confirmed.",
		[]string{"name", "when"}, nil),
	"appointment_reminder": declare("appointment_reminder",
		"Appointment reminder",
		"Hello {{.name}}, this is a reminder of your appointment on {{.when}}.",
		[]string{"name", "when"}, nil),
	"payment_receipt": declare("payment_receipt",
		"Payment receipt",
		"Hello {{.name}}, we received your payment of {{.amount}}. Thank you.",
		[]string{"name", "amount"}, nil),
	"generic": declare("generic",
		`{{if .subject}}{{.subject}}{{else}}Message{{end}}`,
		"{{.body}}",
		[]string{"body"}, []string{"subject"}),
}

// templateNames lists the declared templates, sorted.
func templateNames() []string {
	names := make([]string, 0, len(templates))
	for n := range templates {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (t *messageTemplate) accepts(variable string) bool {
	return slices.Contains(t.required, variable) || slices.Contains(t.optional, variable)
}

// render returns the subject line and the body for vars, which the caller
// has checked against the template.
func (t *messageTemplate) render(vars map[string]string) (subject, body string, err error) {
	data := make(map[string]string, len(t.required)+len(t.optional))
	for _, v := range t.optional {
		data[v] = ""
	}
	for k, v := range vars {
		data[k] = v
	}
	var s, b strings.Builder
	if err := t.subject.Execute(&s, data); err != nil {
		return "", "", fmt.Errorf("render subject: %w", err)
	}
	if err := t.body.Execute(&b, data); err != nil {
		return "", "", fmt.Errorf("render body: %w", err)
	}
	return s.String(), b.String(), nil
}
