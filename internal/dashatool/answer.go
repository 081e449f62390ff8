// Package dashatool owns what a Dasha BlackBox voice agent sees of oncecall:
// the answer to a tool call (outcome, action_id, reason, say, details), how
// each outcome is phrased for the model, the read-only tools, and the tool
// definitions that `oncecall tools export` prints. The HTTP handler lives in
// api; the operations in the registry (internal/op).
package dashatool

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/internal/op"
)

// Answer is the body of every business answer to a tool call (HTTP 200).
// The model rephrases it for the caller: say is what it may and may not
// tell them; only outcome "confirmed" means the request took effect.
type Answer struct {
	Outcome  string `json:"outcome"`
	ActionID string `json:"action_id"`
	// Reason is the lower-case rejection code (slot_unavailable,
	// invalid_arguments, conflicting_request, ...); empty when confirmed.
	Reason  string          `json:"reason,omitempty"`
	Say     string          `json:"say"`
	Details json.RawMessage `json:"details"`
	// Current is set when a confirmed action's object has changed since
	// ("cancelled", "moved", "changed"); see Changed.
	Current string `json:"current,omitempty"`
}

// Reasons oncecall itself gives (operations add their own).
const (
	InvalidArguments   = "invalid_arguments"
	ConflictingRequest = "conflicting_request"
	UnknownAction      = "unknown_action"
	NoAnswer           = "no_answer"
	// NeedsOperator marks a pending answer that is final for the call: the
	// outcome could not be settled automatically and a person follows up.
	NeedsOperator = "needs_operator"
	// NeedsCallerConfirmation rejects a booking, move, cancellation or
	// charge of a tenant with the confirmation gate on that does not carry
	// the caller's confirmation of its time or amount (caller_confirmed).
	NeedsCallerConfirmation = "needs_caller_confirmation"
)

// Default phrasing, used where an operation declares none. The pending
// wording is the one place that tells the model an unknown outcome is not a
// confirmation; a test checks it never reads like one.
const (
	defaultConfirmed = "The request went through. You may tell the caller it is confirmed, using the facts in details."
	defaultRejected  = "The request was not carried out. Tell the caller it could not be done and offer an alternative."
	defaultPending   = "This request is NOT confirmed yet: its result is still unknown. Do not tell the caller that it happened."
	// pendingNext follows every pending say that has an action id: the one
	// way to learn the outcome. Operations phrase only what not to say.
	pendingNext = "Say you are still checking, then call check_action_status with this action_id and follow its answer."
	// pendingNoID is pending when no action id is known yet: another attempt
	// of the same request holds it in an unfinished transaction.
	pendingNoID = "This request is NOT confirmed yet: an earlier attempt of it is still in progress. Do not tell the caller that it happened. " +
		"Say you are still checking, wait a moment, then call this tool again with exactly the same arguments."
	// defaultChanged is said of a confirmed action whose object changed
	// since, where the operation declares no phrase of its own.
	defaultChanged = "This request did go through, but what it did has changed since (see current): do not tell the caller " +
		"it is still so."
	// needsOperatorSay is the last word on an action an operator must
	// settle: checking again in this call cannot change it.
	needsOperatorSay = "This request is NOT confirmed: its result could not be settled automatically, and a person from the " +
		"business will check it and follow up with the caller. Tell the caller exactly that: it is not confirmed yet and " +
		"someone will get back to them about it. Do not say it happened or that it failed, do not try it again, and do not " +
		"call check_action_status for it again in this call."
	fallbackSay = "oncecall did not answer, so this request is NOT confirmed and its result is unknown. Do not tell the caller that it happened. " +
		"Call the tool again with exactly the same arguments (a repeat never does anything twice); if it fails again, " +
		"tell the caller you cannot verify it right now and that someone will follow up."
)

// Say returns the guidance for an outcome of an operation with phrases p;
// reason is the stored rejection code (any case). A pending say is the
// operation's pending phrase followed by how to learn the outcome.
func Say(p op.Phrases, outcome oncecall.Outcome, reason string) string {
	switch outcome {
	case oncecall.Confirmed:
		return cmp.Or(p.Confirmed, defaultConfirmed)
	case oncecall.Rejected:
		if s, ok := p.Rejected[strings.ToUpper(reason)]; ok && s != "" {
			return s
		}
		return cmp.Or(p.Rejected[""], defaultRejected)
	}
	return cmp.Or(p.Pending, defaultPending) + " " + pendingNext
}

// ForAction answers with an action as it stands. It is a function of the
// stored action only, so a replay answers byte for byte like the first.
func ForAction(a oncecall.Action, p op.Phrases) Answer {
	ans := Answer{ActionID: a.ID.String(), Details: json.RawMessage("{}")}
	if a.State != oncecall.Completed && a.NeedsOperator {
		ans.Outcome, ans.Reason, ans.Say = string(oncecall.Pending), NeedsOperator, needsOperatorSay
		return ans
	}
	if a.State != oncecall.Completed {
		ans.Outcome, ans.Say = string(oncecall.Pending), Say(p, oncecall.Pending, "")
		return ans
	}
	ans.Outcome = string(a.Outcome)
	ans.Say = Say(p, a.Outcome, a.Reason)
	if a.Outcome == oncecall.Confirmed && p.Performed != "" && byProvider(a.Result) {
		ans.Say = p.Performed
	}
	if a.Outcome == oncecall.Rejected {
		ans.Reason = strings.ToLower(a.Reason)
	}
	switch {
	case a.Result != nil:
		ans.Details = withhold(a.Result, p.Withhold)
	case a.ResourceID != "":
		ans.Details, _ = json.Marshal(map[string]string{"id": a.ResourceID})
	}
	return ans
}

// Changed marks an answer for a confirmed action whose object has changed
// since (current is what became of it): it keeps the outcome (what the
// request did) and says that this is no longer so. Its details are moved
// under as_of_the_action, next to current, so that no field of them (a
// booking's status "active") reads as the object's state now.
func Changed(ans Answer, p op.Phrases, current string) Answer {
	if current == "" || ans.Outcome != string(oncecall.Confirmed) {
		return ans
	}
	ans.Current, ans.Say = current, cmp.Or(p.Changed, defaultChanged)
	details, err := json.Marshal(map[string]any{"current": current, "as_of_the_action": ans.Details})
	if err == nil {
		ans.Details = details
	}
	return ans
}

// byProvider reports whether a confirmed action's stored answer names the
// record a provider made of its effect (provider_ref): an effect outside
// oncecall that a provider performed, not one only recorded locally.
func byProvider(result []byte) bool {
	var r struct {
		ProviderRef string `json:"provider_ref"`
	}
	return json.Unmarshal(result, &r) == nil && r.ProviderRef != ""
}

// withhold removes the named fields from a JSON object and from the
// objects it holds; anything else is returned as it is. The result is a
// function of its input, so a replay answers like the first.
func withhold(body json.RawMessage, fields []string) json.RawMessage {
	var m map[string]json.RawMessage
	if len(fields) == 0 || json.Unmarshal(body, &m) != nil {
		return body
	}
	for k, v := range m {
		if slices.Contains(fields, k) {
			delete(m, k)
		} else if len(v) > 0 && v[0] == '{' {
			m[k] = withhold(v, fields)
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}

// InProgress is pending for an action another attempt still runs; id is
// uuid.Nil when that attempt has not committed its claim yet.
func InProgress(id uuid.UUID, p op.Phrases) Answer {
	if id == uuid.Nil {
		return Answer{Outcome: string(oncecall.Pending), Say: pendingNoID, Details: json.RawMessage("{}")}
	}
	return Answer{Outcome: string(oncecall.Pending), ActionID: id.String(), Say: Say(p, oncecall.Pending, ""), Details: json.RawMessage("{}")}
}

// Invalid rejects arguments that do not match the tool's schema. Nothing
// was claimed: the corrected call is a first attempt.
func Invalid(field, message string) Answer {
	var say string
	switch field {
	case "action_id":
		say = fmt.Sprintf("Nothing was done: %s. Call the tool again with the action_id exactly as an earlier answer gave it, or without action_id.", message)
	case "arguments", "":
		field = "arguments"
		say = fmt.Sprintf("Nothing was done: %s. Call the tool again with its arguments as one JSON object.", message)
	default:
		say = fmt.Sprintf("Nothing was done: %s. Get the right %s (ask the caller for what you need, or look it up), then call the tool again with it.", message, field)
	}
	details, _ := json.Marshal(map[string]string{"field": field, "message": message})
	return Answer{Outcome: string(oncecall.Rejected), Reason: InvalidArguments, Say: say, Details: details}
}

// Conflicting rejects a request whose identity (its action_id, key, or the
// identity fields of the operation) already names an action with other
// details; stands is the answer for that action as it is now. This request
// did nothing and the existing action is untouched, but the existing one
// may well have happened: the answer says what stands (details.existing)
// and, when it did or may have, forbids a second attempt.
func Conflicting(stands Answer) Answer {
	details, _ := json.Marshal(map[string]any{
		"existing_action_id": stands.ActionID,
		"existing": map[string]any{
			"action_id": stands.ActionID, "outcome": stands.Outcome, "reason": stands.Reason,
			"current": stands.Current, "details": stands.Details,
		},
	})
	var say string
	switch stands.Outcome {
	case string(oncecall.Confirmed):
		say = "This request was not carried out again: an earlier request for the same thing already went through, with the " +
			"details in details.existing, and those stand, not the ones just sent. Tell the caller what stands from " +
			"details.existing (if it has a current, it has changed since). Do not call this tool again for it. Confirm the details with the " +
			"caller: if they want something different, use the tool that changes it (such as reschedule_appointment)."
	case string(oncecall.Pending):
		say = "This request was not carried out: an earlier request for the same thing, with other details, is NOT confirmed " +
			"yet and its result is unknown. Do not tell the caller that it happened, and do not call this tool again for it; " +
			"call check_action_status with details.existing_action_id and follow its answer."
	default:
		say = "Nothing was done: an earlier request with the same identity had different details and was not carried out " +
			"(see details.existing). Confirm the details with the caller."
	}
	return Answer{Outcome: string(oncecall.Rejected), Reason: ConflictingRequest, Details: details, Say: say}
}

// Unknown rejects a check_action_status for an id the tenant does not have.
func Unknown(id string) Answer {
	details, _ := json.Marshal(map[string]string{"action_id": id})
	return Answer{
		Outcome: string(oncecall.Rejected), Reason: UnknownAction, Details: details,
		Say: "No request with that action_id exists. Do not tell the caller anything happened because of it; " +
			"use the action_id exactly as an earlier answer gave it.",
	}
}

// Fallback is the fallBackResult of every tool that acts: what the model
// gets when the webhook fails. It is pending and forbids claiming success.
func Fallback() Answer {
	return Answer{Outcome: string(oncecall.Pending), Reason: NoAnswer, Say: fallbackSay, Details: json.RawMessage("{}")}
}

// readFallbackSay is the fallBackResult of a read-only tool: nothing can
// have happened, only the look-up failed.
const readFallbackSay = "oncecall did not answer, so nothing could be looked up: treat what you meant to check as NOT confirmed. " +
	"Do not guess or tell the caller anything as if it were looked up. Call the tool again with the same arguments; if it " +
	"fails again, tell the caller you cannot look it up right now and that someone will follow up."

// ReadFallback is the fallBackResult of a read-only tool.
func ReadFallback() Answer {
	return Answer{Outcome: string(oncecall.Pending), Reason: NoAnswer, Say: readFallbackSay, Details: json.RawMessage("{}")}
}
