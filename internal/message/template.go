package message

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
)

// A messageTemplate is a message a send can render: a built-in one declared
// in code, or a version of a tenant's own. Its variables are strings the
// caller supplies; every required one must be given and no other is
// accepted, so a typo is a 400 rather than a message with a hole.
type messageTemplate struct {
	name    string
	version int                // 0 for a built-in
	subject *template.Template // e-mail subject line; nil: not sendable by e-mail
	body    *template.Template
	// required and optional are sorted; optional ones render as "" when absent.
	required []string
	optional []string
	// subjectText and bodyText are the declaration's source.
	subjectText, bodyText string
}

// Limits of a template declaration.
const (
	maxTemplateName    = 64
	maxTemplateSubject = 200
	maxTemplateBody    = 2000
	maxVariableName    = 40
)

var (
	templateNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	variableNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)
)

// errSyntax is what a template using more than the allowed syntax hears.
const errSyntax = "may only use {{.variable}} and {{if .variable}}...{{else}}...{{end}}"

// parseTemplate checks a declaration and parses it. The syntax is a small,
// safe part of text/template: {{.name}} inserts a variable, {{if .name}}
// ... {{else}} ... {{end}} tests whether one is non-empty. No functions,
// loops or nested templates, so rendering a tenant's text costs little and
// does nothing else; and every variable it uses must be declared. Errors
// are *fault.Error naming the field.
func parseTemplate(name, subject, body string, required, optional []string) (*messageTemplate, error) {
	t := &messageTemplate{name: name, required: required, optional: optional, subjectText: subject, bodyText: body}
	declared := append(slices.Clone(required), optional...)
	var err error
	if subject != "" {
		if t.subject, err = parsePart(name, "subject", subject, declared); err != nil {
			return nil, err
		}
	}
	if t.body, err = parsePart(name, "body", body, declared); err != nil {
		return nil, err
	}
	return t, nil
}

func parsePart(name, field, text string, declared []string) (*template.Template, error) {
	tmpl, err := template.New(name + "." + field).Option("missingkey=error").Parse(text)
	if err != nil {
		msg := err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:] // drop text/template's "template: name:1:" prefix
		}
		return nil, fault.Field(field, "is not a valid template: %s", msg)
	}
	if len(tmpl.Templates()) != 1 || tmpl.Tree == nil {
		return nil, fault.Field(field, errSyntax)
	}
	var walk func(n parse.Node) error
	walk = func(n parse.Node) error {
		switch n := n.(type) {
		case *parse.ListNode:
			if n == nil {
				return nil
			}
			for _, c := range n.Nodes {
				if err := walk(c); err != nil {
					return err
				}
			}
			return nil
		case *parse.TextNode, *parse.CommentNode:
			return nil
		case *parse.ActionNode:
			return variableOf(field, n.Pipe, declared)
		case *parse.IfNode:
			if err := variableOf(field, n.Pipe, declared); err != nil {
				return err
			}
			if err := walk(n.List); err != nil {
				return err
			}
			return walk(n.ElseList)
		}
		return fault.Field(field, errSyntax)
	}
	if err := walk(tmpl.Tree.Root); err != nil {
		return nil, err
	}
	return tmpl, nil
}

// variableOf accepts a pipeline that is exactly one declared variable.
func variableOf(field string, p *parse.PipeNode, declared []string) error {
	if p == nil || len(p.Decl) > 0 || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return fault.Field(field, errSyntax)
	}
	f, ok := p.Cmds[0].Args[0].(*parse.FieldNode)
	if !ok || len(f.Ident) != 1 {
		return fault.Field(field, errSyntax)
	}
	if !slices.Contains(declared, f.Ident[0]) {
		return fault.Field(field, "uses the variable %s, which is not declared: add it to variables.required or variables.optional", f.Ident[0])
	}
	return nil
}

func mustParse(name, subject, body string, required, optional []string) *messageTemplate {
	t, err := parseTemplate(name, subject, body, required, optional)
	if err != nil {
		panic(fmt.Sprintf("built-in template %s: %v", name, err))
	}
	return t
}

// builtins are the templates every tenant has. A tenant template of the
// same name overrides one for that tenant. Keep the description of
// SendInput.Template in step (a test checks it).
var builtins = map[string]*messageTemplate{
	"appointment_confirmation": mustParse("appointment_confirmation",
		"Your appointment is confirmed",
		"Hello {{.name}}, your appointment on {{.when}} is confirmed.",
		[]string{"name", "when"}, nil),
	"appointment_reminder": mustParse("appointment_reminder",
		"Appointment reminder",
		"Hello {{.name}}, this is a reminder of your appointment on {{.when}}.",
		[]string{"name", "when"}, nil),
	"payment_receipt": mustParse("payment_receipt",
		"Payment receipt",
		"Hello {{.name}}, we received your payment of {{.amount}}. Thank you.",
		[]string{"amount", "name"}, nil),
	"generic": mustParse("generic",
		`{{if .subject}}{{.subject}}{{else}}Message{{end}}`,
		"{{.body}}",
		[]string{"body"}, []string{"subject"}),
}

// builtinNames lists the built-in templates, sorted.
func builtinNames() []string {
	names := make([]string, 0, len(builtins))
	for n := range builtins {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// lookup returns the template a tenant's send of name uses: the newest
// version of the tenant's own template of that name, else the built-in one.
func lookup(ctx context.Context, tx *db.Tx, tenant uuid.UUID, name string) (*messageTemplate, error) {
	stored, err := tx.LatestTemplate(ctx, tenant, name)
	switch {
	case err == nil:
		t, err := fromStored(stored)
		if err != nil {
			return nil, fmt.Errorf("stored template %s v%d: %w", name, stored.Version, err)
		}
		return t, nil
	case !errors.Is(err, db.ErrNotFound):
		return nil, err
	}
	if t, ok := builtins[name]; ok {
		return t, nil
	}
	names, err := available(ctx, tx, tenant)
	if err != nil {
		return nil, err
	}
	return nil, fault.Field("template", "names no template of this business; use one of %s", strings.Join(names, ", "))
}

// rendered is a send's text as the tenant's template makes it now, with
// the template version it came from (0 for a built-in).
type rendered struct {
	subject, body string
	version       int
}

// render reads the template a send names, in the claim's transaction, and
// fills it with the send's variables.
func render(ctx context.Context, tx *db.Tx, tenant uuid.UUID, in SendInput) (rendered, error) {
	t, err := lookup(ctx, tx, tenant, in.Template)
	if err != nil {
		return rendered{}, err
	}
	subject, body, err := t.fill(in)
	return rendered{subject: subject, body: body, version: t.version}, err
}

func fromStored(s oncecall.Template) (*messageTemplate, error) {
	t, err := parseTemplate(s.Name, s.Subject, s.Body, s.Required, s.Optional)
	if err != nil {
		return nil, err
	}
	t.version = s.Version
	return t, nil
}

// available lists the names a tenant can send: its own and the built-ins.
func available(ctx context.Context, tx *db.Tx, tenant uuid.UUID) ([]string, error) {
	own, err := tx.LatestTemplates(ctx, tenant)
	if err != nil {
		return nil, err
	}
	names := builtinNames()
	for _, t := range own {
		if _, ok := builtins[t.Name]; !ok {
			names = append(names, t.Name)
		}
	}
	slices.Sort(names)
	return names, nil
}

func (t *messageTemplate) accepts(variable string) bool {
	return slices.Contains(t.required, variable) || slices.Contains(t.optional, variable)
}

// check holds in's variables against the template: every required one
// present, no unknown one.
func (t *messageTemplate) check(in SendInput) error {
	for _, k := range sortedKeys(in.Variables) {
		if !t.accepts(k) {
			return fault.Field("variables."+k, "is not a variable of template %s", in.Template)
		}
	}
	for _, k := range t.required {
		if _, ok := in.Variables[k]; !ok {
			return fault.Field("variables."+k, "is required by template %s", in.Template)
		}
	}
	if in.Channel == Email && t.subject == nil {
		return fault.Field("channel", "cannot be email: template %s has no e-mail subject; send it by sms", in.Template)
	}
	return nil
}

// fill checks in against the template and renders it for in's channel: the
// subject line (e-mail only) and the body.
func (t *messageTemplate) fill(in SendInput) (subject, body string, err error) {
	if err := t.check(in); err != nil {
		return "", "", err
	}
	subject, body, err = t.render(in.Variables)
	if err != nil {
		return "", "", err
	}
	if strings.TrimSpace(body) == "" {
		return "", "", fault.Field("variables", "make the text of template %s empty", in.Template)
	}
	switch in.Channel {
	case SMS:
		subject = ""
		if utf8.RuneCountInString(body) > maxSMS {
			return "", "", fault.Field("variables", "make the text longer than %d characters", maxSMS)
		}
	case Email:
		subject = strings.TrimSpace(subject)
		if subject == "" {
			return "", "", fault.Field("variables", "make the e-mail subject of template %s empty", in.Template)
		}
		if strings.ContainsFunc(subject, func(r rune) bool { return r < 0x20 }) {
			return "", "", fault.Field("variables", "put a line break into the e-mail subject of template %s", in.Template)
		}
	}
	return subject, body, nil
}

// render returns the subject line ("" without a subject template) and the
// body for vars, which the caller has checked against the template.
func (t *messageTemplate) render(vars map[string]string) (subject, body string, err error) {
	data := make(map[string]string, len(t.required)+len(t.optional))
	for _, v := range t.optional {
		data[v] = ""
	}
	for k, v := range vars {
		data[k] = v
	}
	var s, b strings.Builder
	if t.subject != nil {
		if err := t.subject.Execute(&s, data); err != nil {
			return "", "", fmt.Errorf("render subject: %w", err)
		}
	}
	if err := t.body.Execute(&b, data); err != nil {
		return "", "", fmt.Errorf("render body: %w", err)
	}
	return s.String(), b.String(), nil
}
