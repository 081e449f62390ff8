package dashatool

import (
	"fmt"
	"slices"
	"strings"
)

// Platforms oncecall exports tool definitions for; dasha is Definitions.
var Platforms = []string{"dasha", "vapi", "retell", "elevenlabs"}

// Tool timeouts written into the other platforms' definitions. oncecall
// answers within AnswerBudget (8s) on every platform; these are the
// platforms' own limits, left above it.
const (
	// VapiTimeoutSeconds is Vapi's default tool timeout.
	VapiTimeoutSeconds = 20
	// RetellTimeoutMS is shorter than Retell's 2 minute default, so a lost
	// answer is a failure the model hears while the caller still waits.
	RetellTimeoutMS = 10000
	// ElevenLabsTimeoutSeconds is ElevenLabs' default response timeout.
	ElevenLabsTimeoutSeconds = 20
	// ElevenLabsAsyncTimeoutSeconds is the response timeout of the write
	// tools, which ElevenLabs runs in the background (execution_mode
	// async): oncecall answers them when their action settles, within it.
	ElevenLabsAsyncTimeoutSeconds = 60
)

// What a platform says while a tool runs and when it fails. None of them
// says that anything happened: only the answer's say may.
const (
	// StartMessage is said as a tool call starts (Vapi request-start,
	// Retell's execution message), so the caller does not wait in silence.
	StartMessage = "One moment while I check that."
	// DelayedMessage is said when a tool call has taken DelayedAfterMS
	// without an answer (Vapi request-response-delayed).
	DelayedMessage = "Thanks for waiting, this is taking a little longer than usual."
	// DelayedAfterMS is well inside the answer budget, so the caller hears
	// it only when oncecall is slow.
	DelayedAfterMS = 3000
	// FailureMessage is what Vapi speaks when a tool call with an effect
	// failed (no answer within its timeout, an error): it never says the
	// request happened.
	FailureMessage = "I couldn't confirm that just now, so please don't treat it as done yet. Let me check again."
	// ReadFailureMessage is FailureMessage for a read-only tool.
	ReadFailureMessage = "I couldn't look that up just now. Let me try again."
)

// PlatformDefinitions renders defs (Definitions' output for the same base
// URL and key) for platform: exactly what its create-tool request takes,
// one object per tool. platform "dasha" returns defs as they are.
//
// Each platform takes a subset of JSON Schema for the arguments (see
// platformSchema); a constraint it cannot carry is left to the tool's
// description, and oncecall still checks it: a value outside it is answered
// invalid_arguments naming the field.
func PlatformDefinitions(platform string, defs []Definition, baseURL, apiKey string) ([]any, error) {
	base := strings.TrimRight(baseURL, "/")
	if apiKey == "" {
		apiKey = DefaultAPIKeyPlaceholder
	}
	out := make([]any, 0, len(defs))
	for _, d := range defs {
		switch platform {
		case "dasha":
			out = append(out, d)
		case "vapi":
			out = append(out, vapiTool(d, base, apiKey))
		case "retell":
			out = append(out, retellFunction(d, base, apiKey))
		case "elevenlabs":
			out = append(out, elevenLabsTool(d, base, apiKey))
		default:
			return nil, fmt.Errorf("unknown platform %q: one of %s", platform, strings.Join(Platforms, ", "))
		}
	}
	return out, nil
}

// vapiTool is Vapi's create-tool request for a function tool whose server is
// oncecall's Vapi webhook (CreateToolsRequest.Function), with what Vapi says
// while it runs: request-start at once, request-response-delayed when the
// answer is slow, request-failed when none comes.
func vapiTool(d Definition, base, key string) map[string]any {
	failed := FailureMessage
	if ReadOnly(d.Name) {
		failed = ReadFailureMessage
	}
	return map[string]any{
		"type":  "function",
		"async": false,
		"function": map[string]any{
			"name": d.Name, "description": d.Description, "parameters": platformSchema(d.Schema, vapiKeywords, true),
		},
		"server": map[string]any{
			"url":            base + "/v1/vapi/webhook",
			"timeoutSeconds": VapiTimeoutSeconds,
			"headers":        map[string]string{"X-Vapi-Secret": key},
		},
		"messages": []map[string]any{
			{"type": "request-start", "content": StartMessage},
			{"type": "request-response-delayed", "content": DelayedMessage, "timingMilliseconds": DelayedAfterMS},
			{"type": "request-failed", "content": failed},
		},
	}
}

// retellFunction is a Retell custom function posting to oncecall
// (LlmCreateParams.CustomTool): the agent says StartMessage as it calls it
// and speaks the answer after.
func retellFunction(d Definition, base, key string) map[string]any {
	// Retell types only the top of the parameters (type, properties,
	// required); each property is a JSON Schema as it is.
	params := map[string]any{"type": "object", "properties": d.Schema["properties"]}
	if r, ok := d.Schema["required"]; ok {
		params["required"] = r
	}
	return map[string]any{
		"type":                          "custom",
		"name":                          d.Name,
		"description":                   d.Description,
		"url":                           base + "/v1/retell/functions/" + d.Name,
		"method":                        "POST",
		"headers":                       map[string]string{"Authorization": "Bearer " + key},
		"parameters":                    params,
		"timeout_ms":                    RetellTimeoutMS,
		"speak_during_execution":        true,
		"execution_message_description": StartMessage,
		"execution_message_type":        "static_text",
		"speak_after_execution":         true,
	}
}

// elevenLabsTool is ElevenLabs' create-tool request (ToolRequestModel, in its
// snake_case wire form) for a server (webhook) tool. Its body schema adds
// the dynamic variables oncecall reads: the conversation id, the identity of
// the call, and the caller's number; a property bound to a dynamic variable
// has no description (ElevenLabs takes a value from one source only). The
// agent always speaks before the tool runs (pre_tool_speech force), and an
// error reaches the agent (tool_error_handling_mode passthrough) rather than
// being hidden, so it cannot take a failure for a success. A read-only tool
// runs at once (execution_mode immediate: its answer, within oncecall's
// budget, is what the agent says next). A write, which a remote provider
// may take longer than the budget to settle, runs in the background
// (execution_mode async, response_timeout_secs
// ElevenLabsAsyncTimeoutSeconds) on oncecall's async route, which answers
// once the action settles: its late result.
func elevenLabsTool(d Definition, base, key string) map[string]any {
	body := platformSchema(d.Schema, elevenLabsKeywords, false)
	props := body["properties"].(map[string]any)
	props["system__conversation_id"] = map[string]any{"type": "string", "dynamic_variable": "system__conversation_id"}
	props["system__caller_id"] = map[string]any{"type": "string", "dynamic_variable": "system__caller_id"}
	mode, timeout, path := "immediate", ElevenLabsTimeoutSeconds, "/v1/elevenlabs/tools/"
	if !ReadOnly(d.Name) {
		mode, timeout, path = "async", ElevenLabsAsyncTimeoutSeconds, "/v1/elevenlabs/async/tools/"
	}
	return map[string]any{"tool_config": map[string]any{
		"type":                     "webhook",
		"name":                     d.Name,
		"description":              d.Description,
		"response_timeout_secs":    timeout,
		"pre_tool_speech":          "force",
		"execution_mode":           mode,
		"tool_error_handling_mode": "passthrough",
		"api_schema": map[string]any{
			"url":                 base + path + d.Name,
			"method":              "POST",
			"request_headers":     map[string]string{"X-Oncecall-Key": key},
			"request_body_schema": body,
		},
	}}
}

// The JSON Schema keywords each platform's tool schema takes, by the kind of
// schema (its type). Vapi's JsonSchema takes one type, not a list, and a
// format from a fixed set; ElevenLabs' properties are a literal (type,
// description, enum), an object or an array.
var (
	vapiKeywords = keywords{
		top:     []string{"type", "properties", "required"},
		any:     []string{"type", "description", "enum", "pattern", "format", "items", "properties", "required", "title"},
		formats: []string{"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"},
		oneType: true,
	}
	elevenLabsKeywords = keywords{
		top:    []string{"type", "properties", "required", "description"},
		object: []string{"type", "description", "properties", "required"},
		array:  []string{"type", "description", "items"},
		any:    []string{"type", "description", "enum"},
	}
)

// keywords lists the keywords a platform takes: top for the arguments'
// object, object and array for nested schemas of that type (any when
// empty), any for the rest; formats the formats it takes (all when empty);
// oneType whether a type must be one name (a list ["string", "null"] is
// then its first name other than null).
type keywords struct {
	top, object, array, any []string
	formats                 []string
	oneType                 bool
}

// platformSchema returns a copy of schema with only the keywords k takes, at
// every depth; top says whether schema is the arguments' object.
func platformSchema(schema map[string]any, k keywords, top bool) map[string]any {
	keep := k.any
	switch t := schema["type"]; {
	case top:
		keep = k.top
	case t == "object" && k.object != nil:
		keep = k.object
	case t == "array" && k.array != nil:
		keep = k.array
	}
	out := map[string]any{}
	for _, key := range keep {
		v, ok := schema[key]
		if !ok {
			continue
		}
		switch key {
		case "type":
			if list, isList := v.([]string); isList && k.oneType {
				if i := slices.IndexFunc(list, func(s string) bool { return s != "null" }); i >= 0 {
					v = list[i]
				}
			}
		case "format":
			if f, _ := v.(string); len(k.formats) > 0 && !slices.Contains(k.formats, f) {
				continue
			}
		case "properties":
			props := map[string]any{}
			for name, p := range v.(map[string]any) {
				props[name] = platformSchema(p.(map[string]any), k, false)
			}
			v = props
		case "items":
			v = platformSchema(v.(map[string]any), k, false)
		}
		out[key] = v
	}
	if top && out["properties"] == nil {
		out["properties"] = map[string]any{}
	}
	return out
}
