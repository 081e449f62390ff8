package api

import (
	"encoding/json"

	"github.com/oncecall/oncecall/internal/canon"
	"github.com/oncecall/oncecall/internal/fault"
)

// encodedArguments unwraps arguments that a Dasha payload carries as a JSON
// string holding the object ("arguments": "{\"slot_id\": ...}"). The inner
// JSON gets the same checks as a request body (valid UTF-8, no duplicate
// keys) and must be an object; the tool then sees exactly what it would
// have seen in the object form, so both forms name the same action.
func encodedArguments(raw json.RawMessage) (json.RawMessage, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fault.Field("arguments", "must be a JSON object")
	}
	c, err := canon.Canonical([]byte(s))
	if err != nil || len(c) == 0 || c[0] != '{' {
		return nil, fault.Field("arguments", "must be a JSON object (a string holding one is accepted too)")
	}
	return c, nil
}
