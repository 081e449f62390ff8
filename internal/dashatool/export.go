package dashatool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/oncecall/oncecall/internal/op"
)

// Tool definition settings. Dasha documents that a tool webhook must answer
// in under 10 seconds, so that is the tools' timeout; oncecall answers
// every tool call within AnswerBudget, below it, with pending when a slow
// provider or a running attempt of the same action would make it wait
// longer (the provider's write goes on and is recorded; check_action_status
// learns its outcome). 2 retries (with Dasha's backoff) cover a lost
// connection or a 503 without leaving the caller waiting for long. Every
// retry is safe: it maps to the same action.
const (
	TimeoutSeconds = 10
	RetryCount     = 2
	// AnswerBudget is the default time a tool call has from its arrival to
	// its answer (the server's --dasha-budget).
	AnswerBudget = 8 * time.Second
)

// DefaultAPIKeyPlaceholder stands for the tenant's API key in exported
// definitions; replace it before pasting.
const DefaultAPIKeyPlaceholder = "YOUR_ONCECALL_API_KEY"

// retrySentence ends the description of every tool that has an effect.
const retrySentence = " The answer's outcome is confirmed, rejected or pending; only confirmed means it happened, and its say tells you " +
	"what you may tell the caller. If you call this tool again for the same request (a retry, or after re-planning), " +
	"pass the action_id from the earlier answer."

// Definition is a Dasha BlackBox tool definition, as pasted into an agent's
// Tools or sent to the agents API.
type Definition struct {
	Name           string         `json:"name"`
	Description    string         `json:"description"`
	Schema         map[string]any `json:"schema"`
	Webhook        Webhook        `json:"webhook"`
	FallBackResult Answer         `json:"fallBackResult"`
	TimeoutSeconds int            `json:"timeoutSeconds"`
	RetryCount     int            `json:"retryCount"`
}

// Webhook is where Dasha posts the tool's calls.
type Webhook struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// Definitions returns the definition of every tool: each operation of the
// registry that has a Tool name, and the read-only tools, sorted by name.
// baseURL is oncecall's public URL; apiKey is written into the
// Authorization header (a placeholder when empty).
func Definitions(ops *op.Registry, baseURL, apiKey string) ([]Definition, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("base URL %q must be an http(s) URL such as https://oncecall.example.com", baseURL)
	}
	base := strings.TrimRight(baseURL, "/")
	if apiKey == "" {
		apiKey = DefaultAPIKeyPlaceholder
	}
	def := func(name, description string, schema map[string]any) Definition {
		fallback := Fallback()
		if ReadOnly(name) {
			fallback = ReadFallback()
		}
		return Definition{
			Name: name, Description: description, Schema: schema,
			Webhook: Webhook{
				URL:     base + "/v1/dasha/tools/" + name,
				Headers: map[string]string{"Authorization": "Bearer " + apiKey},
			},
			FallBackResult: fallback, TimeoutSeconds: TimeoutSeconds, RetryCount: RetryCount,
		}
	}
	var defs []Definition
	for _, o := range ops.All() {
		if o.Tool() == "" {
			continue
		}
		defs = append(defs, def(o.Tool(), o.Description()+retrySentence, Schema(o)))
	}
	for _, b := range builtins {
		defs = append(defs, def(b.name, b.description, op.SchemaOf(b.input)))
	}
	sort.Slice(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
	return defs, nil
}

// Schema is the JSON Schema of an operation tool's arguments: the
// operation's input plus the optional action_id that names the action on a
// retry or re-plan.
func Schema(o op.Operation) map[string]any {
	s := op.Schema(o)
	props, _ := s["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		s["properties"] = props
	}
	props["action_id"] = map[string]any{
		"type":      "string",
		"maxLength": 36,
		// A UUID or empty (as absent): the schema keywords every model
		// provider takes have no "format or empty".
		"pattern": "^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})?$",
		"description": "Optional: the action_id from an earlier answer to this same request, exactly as given, when you retry or " +
			"re-plan it. Omit it for a new request; never make one up.",
	}
	if Gated(o.Name()) {
		props[CallerConfirmed] = map[string]any{
			"type":      "string",
			"maxLength": 200,
			"description": "Only when an answer asked for the caller's confirmation (reason needs_caller_confirmation): after " +
				"reading that answer's details.read_back to the caller and hearing them say yes to exactly that, the value of its " +
				"details.caller_confirmed exactly as given (such as 2030-01-02T14:00-05:00 #1a2b3c4d, or 45.00 USD #1a2b3c4d; the " +
				"code names that one read-back), with the same other arguments. A time or amount of your own is not a " +
				"confirmation. Never set it without the caller's yes to that read-back.",
		}
	}
	return s
}

// CallerConfirmed is the argument that carries the caller's confirmation
// through the confirmation gate (a tenant setting): the echo of the
// read-back the caller said yes to.
const CallerConfirmed = "caller_confirmed"

// Gated reports whether an operation is behind the confirmation gate: a
// booking, a move, a cancellation, a charge.
func Gated(operation string) bool {
	switch operation {
	case "appointment.book", "appointment.reschedule", "appointment.cancel", "payment.charge":
		return true
	}
	return false
}

// Marshal renders one definition or a list of them as indented JSON ending
// in a newline, without HTML escaping, exactly as export prints it.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteDir writes each definition to dir/<name>.json.
func WriteDir(dir string, defs []Definition) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, d := range defs {
		b, err := Marshal(d)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, d.Name+".json"), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Template is a message template a tenant can send, as the send tool
// describes it.
type Template struct {
	Name     string
	Required []string
	Optional []string
}

// WithTemplates narrows the definition of the tool named tool (send_message)
// to the templates one tenant can send: its template argument takes exactly
// their names, and its description names each one's variables. Without it
// the argument takes any template name and the description names only the
// built-in ones; a wrong name is answered invalid_arguments listing the
// tenant's templates.
func WithTemplates(defs []Definition, tool string, templates []Template) {
	for i := range defs {
		if defs[i].Name != tool {
			continue
		}
		props, _ := defs[i].Schema["properties"].(map[string]any)
		p, _ := props["template"].(map[string]any)
		if p == nil {
			return
		}
		names := make([]string, len(templates))
		parts := make([]string, len(templates))
		for j, t := range templates {
			names[j] = t.Name
			vars := append(append([]string{}, t.Required...), optionalNames(t.Optional)...)
			parts[j] = fmt.Sprintf("%s (variables: %s)", t.Name, strings.Join(vars, ", "))
			if len(vars) == 0 {
				parts[j] = t.Name + " (no variables)"
			}
		}
		delete(p, "pattern")
		delete(p, "maxLength")
		p["enum"] = names
		p["description"] = "The message template: " + strings.Join(parts, "; ") + "."
	}
}

func optionalNames(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "optional " + n
	}
	return out
}
