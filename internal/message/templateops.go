package message

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
)

// Rejection reasons.
const (
	TemplateExists   = "TEMPLATE_EXISTS"
	TemplateNotFound = "TEMPLATE_NOT_FOUND"
)

// TemplateInput is the input of message_template.create and
// message_template.update: a whole template. An update replaces every field
// and makes the next version.
type TemplateInput struct {
	Name      string            `json:"name" required:"true" maxLength:"64" pattern:"^[a-z][a-z0-9_]*$" desc:"The template's name, which sends give as template: lower-case letters, digits and underscores, starting with a letter. A built-in template's name overrides that template for this tenant."`
	Subject   string            `json:"subject" maxLength:"200" desc:"Optional: the e-mail subject line, a template like body on one line. Without it the template can be sent only by SMS."`
	Body      string            `json:"body" required:"true" maxLength:"2000" desc:"The text of every channel: {{.variable}} inserts a variable, {{if .variable}}...{{else}}...{{end}} tests whether one was given."`
	Variables TemplateVariables `json:"variables" desc:"The variables the template takes. Every variable the subject and body use must be declared."`
}

// TemplateVariables declares a template's variables.
type TemplateVariables struct {
	Required []string `json:"required" desc:"Variables every send must give."`
	Optional []string `json:"optional" desc:"Variables a send may give; absent ones render as empty text."`
}

// Template is a template as the API shows it.
type Template struct {
	Name string `json:"name"`
	// Version counts a tenant template's versions from 1; 0 for a built-in.
	Version   int               `json:"version"`
	Builtin   bool              `json:"builtin"`
	Subject   string            `json:"subject,omitempty"`
	Body      string            `json:"body"`
	Variables TemplateVariables `json:"variables"`
	CreatedAt *time.Time        `json:"created_at,omitempty"`
}

var templatePhrases = op.Phrases{
	Confirmed: "The message template is saved.",
	Rejected: map[string]string{
		TemplateExists:   "A template of that name already exists; update it instead.",
		TemplateNotFound: "There is no template of that name to update; create it first.",
		"":               "The template was not saved.",
	},
	Pending: "The template change is NOT confirmed yet.",
}

// CreateTemplate stores version 1 of a tenant's template.
var CreateTemplate = family.Add(op.Define(op.Spec[TemplateInput]{
	Name:        "message_template.create",
	Label:       "New message template",
	Version:     1,
	Description: "Create a message template of this tenant.",
	Logic:       createTemplateOp{},
	Say:         templatePhrases,
}))

// createTemplateOp is the logic of CreateTemplate.
type createTemplateOp struct{}

func (createTemplateOp) Normalize(in *TemplateInput) error { return normalizeTemplate(in) }

func (createTemplateOp) Execute(ctx context.Context, tx *db.Tx, x idem.Exec, in TemplateInput) (idem.Result, error) {
	return saveTemplate((*db.Tx).CreateTemplate, http.StatusCreated, TemplateExists)(ctx, tx, x, in)
}

// UpdateTemplate stores the next version of a tenant's template. Messages
// sent before keep the text of the version they used.
var UpdateTemplate = family.Add(op.Define(op.Spec[TemplateInput]{
	Name:        "message_template.update",
	Label:       "Message template change",
	Version:     1,
	Description: "Replace a message template of this tenant with a new version.",
	Logic:       updateTemplateOp{},
	Say:         templatePhrases,
}))

// updateTemplateOp is the logic of UpdateTemplate.
type updateTemplateOp struct{}

func (updateTemplateOp) Normalize(in *TemplateInput) error { return normalizeTemplate(in) }

func (updateTemplateOp) Execute(ctx context.Context, tx *db.Tx, x idem.Exec, in TemplateInput) (idem.Result, error) {
	return saveTemplate((*db.Tx).AddTemplateVersion, http.StatusOK, TemplateNotFound)(ctx, tx, x, in)
}

// saveTemplate is the Execute of a template write: write stores a version
// and reports whether it could; when not, the action is rejected with
// reason, naming the template.
func saveTemplate(write func(*db.Tx, context.Context, db.NewTemplate) (oncecall.Template, bool, error), status int, reason string) func(context.Context, *db.Tx, idem.Exec, TemplateInput) (idem.Result, error) {
	return func(ctx context.Context, tx *db.Tx, x idem.Exec, in TemplateInput) (idem.Result, error) {
		t, saved, err := write(tx, ctx, newTemplate(x, in))
		switch {
		case err != nil:
			return idem.Result{}, err
		case !saved:
			return op.Reject(reason, map[string]string{"name": in.Name})
		}
		return op.Confirm(status, templateRef(t), view(t))
	}
}

// templateRef is a template version's resource id, kept with the compact
// action once its body is pruned.
func templateRef(t oncecall.Template) string { return t.Name + "/v" + strconv.Itoa(t.Version) }

func newTemplate(x idem.Exec, in TemplateInput) db.NewTemplate {
	return db.NewTemplate{
		TenantID: x.TenantID, ActionID: x.ActionID, Name: in.Name, Subject: in.Subject, Body: in.Body,
		Required: in.Variables.Required, Optional: in.Variables.Optional,
	}
}

// normalizeTemplate checks a declaration: names, lengths, the template
// syntax, every variable used declared, and the rule for overriding a
// built-in. Variable lists are sorted, so their order is not part of the
// fingerprint.
func normalizeTemplate(in *TemplateInput) error {
	in.Name = strings.TrimSpace(in.Name)
	switch {
	case in.Name == "":
		return fault.Field("name", "is required")
	case !templateNamePattern.MatchString(in.Name):
		return fault.Field("name", "must be lower-case letters, digits and underscores, starting with a letter, at most %d characters", maxTemplateName)
	}
	if err := op.First(op.Text("subject", &in.Subject, maxTemplateSubject, false),
		op.Text("body", &in.Body, maxTemplateBody, true)); err != nil {
		return err
	}
	if strings.ContainsAny(in.Subject, "\n\t") {
		return fault.Field("subject", "must be one line")
	}
	v := &in.Variables
	if err := variableList("variables.required", &v.Required); err != nil {
		return err
	}
	if err := variableList("variables.optional", &v.Optional); err != nil {
		return err
	}
	for _, name := range v.Optional {
		if slices.Contains(v.Required, name) {
			return fault.Field("variables.optional", "repeats %s, which is required", name)
		}
	}
	if len(v.Required)+len(v.Optional) > maxVariables {
		return fault.Field("variables", "must declare at most %d variables", maxVariables)
	}
	if _, err := parseTemplate(in.Name, in.Subject, in.Body, v.Required, v.Optional); err != nil {
		return err
	}
	return overridesCleanly(in)
}

func variableList(field string, names *[]string) error {
	out := make([]string, 0, len(*names))
	for _, n := range *names {
		n = strings.TrimSpace(n)
		if !variableNamePattern.MatchString(n) {
			return fault.Field(field, "must hold variable names: lower-case letters, digits and underscores, starting with a letter, at most %d characters", maxVariableName)
		}
		if slices.Contains(out, n) {
			return fault.Field(field, "names %s twice", n)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	*names = out
	return nil
}

// overridesCleanly: a template named like a built-in replaces it wherever
// it is sent, by the API, by voice agents and as a booking's confirmation.
// So every send that fits the built-in must fit it too: it accepts each of
// the built-in's variables, requires none beyond the built-in's required
// ones, and has an e-mail subject.
func overridesCleanly(in *TemplateInput) error {
	b, ok := builtins[in.Name]
	if !ok {
		return nil
	}
	declared := append(slices.Clone(in.Variables.Required), in.Variables.Optional...)
	for _, v := range append(slices.Clone(b.required), b.optional...) {
		if !slices.Contains(declared, v) {
			return fault.Field("variables", "must declare %s: a template named %s overrides the built-in one, whose senders give %s",
				v, in.Name, strings.Join(append(slices.Clone(b.required), b.optional...), ", "))
		}
	}
	for _, v := range in.Variables.Required {
		if !slices.Contains(b.required, v) {
			return fault.Field("variables.required", "must not require %s: a template named %s overrides the built-in one, which requires only %s; declare it optional",
				v, in.Name, strings.Join(b.required, ", "))
		}
	}
	if in.Subject == "" {
		return fault.Field("subject", "is required: a template named %s overrides the built-in one, which can be sent by e-mail", in.Name)
	}
	return nil
}

func view(t oncecall.Template) Template {
	created := t.CreatedAt
	return Template{
		Name: t.Name, Version: t.Version, Subject: t.Subject, Body: t.Body,
		Variables: TemplateVariables{Required: t.Required, Optional: t.Optional}, CreatedAt: &created,
	}
}

// ListTemplates returns every template a tenant can send, by name: the
// newest version of each of its own, and each built-in it has not
// overridden.
func ListTemplates(ctx context.Context, store *db.Store, tenant uuid.UUID) ([]Template, error) {
	own, err := store.LatestTemplates(ctx, tenant)
	if err != nil {
		return nil, err
	}
	out := make([]Template, 0, len(own)+len(builtins))
	mine := map[string]bool{}
	for _, t := range own {
		out = append(out, view(t))
		mine[t.Name] = true
	}
	for _, name := range builtinNames() {
		if mine[name] {
			continue
		}
		b := builtins[name]
		out = append(out, Template{
			Name: name, Builtin: true, Subject: b.subjectText, Body: b.bodyText,
			Variables: TemplateVariables{Required: nonNil(b.required), Optional: nonNil(b.optional)},
		})
	}
	slices.SortFunc(out, func(a, b Template) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
