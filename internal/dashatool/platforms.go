package dashatool

import (
	"fmt"
	"maps"
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
)

// FailureMessage is what Vapi speaks when a tool call failed (no answer
// within its timeout, an error): it never says the request happened.
const FailureMessage = "I couldn't confirm that just now, so please don't treat it as done yet. Let me check again."

// PlatformDefinitions renders defs (Definitions' output for the same base
// URL and key) for platform: what its dashboard or API takes, one object
// per tool. platform "dasha" returns defs as they are.
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

// vapiTool is a Vapi function tool whose server is oncecall's Vapi webhook.
func vapiTool(d Definition, base, key string) map[string]any {
	return map[string]any{
		"type":  "function",
		"async": false,
		"function": map[string]any{
			"name": d.Name, "description": d.Description, "parameters": d.Schema,
		},
		"server": map[string]any{
			"url":            base + "/v1/vapi/webhook",
			"timeoutSeconds": VapiTimeoutSeconds,
			"headers":        map[string]string{"X-Vapi-Secret": key},
		},
		"messages": []map[string]any{{"type": "request-failed", "content": FailureMessage}},
	}
}

// retellFunction is a Retell custom function posting to oncecall.
func retellFunction(d Definition, base, key string) map[string]any {
	return map[string]any{
		"type":                   "custom",
		"name":                   d.Name,
		"description":            d.Description,
		"url":                    base + "/v1/retell/functions/" + d.Name,
		"method":                 "POST",
		"headers":                map[string]string{"Authorization": "Bearer " + key},
		"parameters":             d.Schema,
		"timeout_ms":             RetellTimeoutMS,
		"speak_during_execution": false,
		"speak_after_execution":  true,
	}
}

// elevenLabsTool is an ElevenLabs server (webhook) tool. Its body schema
// adds the dynamic variables oncecall reads: the conversation id, the
// identity of the call, and the caller's number.
func elevenLabsTool(d Definition, base, key string) map[string]any {
	body := maps.Clone(d.Schema)
	props := map[string]any{}
	if p, ok := body["properties"].(map[string]any); ok {
		props = maps.Clone(p)
	}
	props["system__conversation_id"] = map[string]any{
		"type": "string", "dynamic_variable": "system__conversation_id",
		"description": "The conversation's id: the identity of this call's requests.",
	}
	props["system__caller_id"] = map[string]any{
		"type": "string", "dynamic_variable": "system__caller_id",
		"description": "The caller's phone number, when the call is a phone call.",
	}
	body["properties"] = props
	return map[string]any{
		"type":                  "webhook",
		"name":                  d.Name,
		"description":           d.Description,
		"response_timeout_secs": ElevenLabsTimeoutSeconds,
		"api_schema": map[string]any{
			"url":                 base + "/v1/elevenlabs/tools/" + d.Name,
			"method":              "POST",
			"request_headers":     map[string]string{"X-Oncecall-Key": key},
			"request_body_schema": body,
		},
	}
}
