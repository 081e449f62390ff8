package op

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/oncecall/oncecall/internal/canon"
	"github.com/oncecall/oncecall/internal/fault"
)

// A voice tool call's body is canonicalised once (canon.Canonical: it
// validates it, and its bytes are what the fingerprint is of). What is read
// of it afterwards, the webhook's envelope and the tool's arguments, is
// mostly structs of strings: for those, one walk over the canonical members
// checks each key's exact name, decodes its value and takes out a member the
// caller asks for (a tool call's action_id), where the general path scans
// the bytes three times (canon.Cut, CheckFieldNames, encoding/json). Any
// other type takes the general path. Both answer the same errors.

// flatField is a field of a flat struct: its index, and whether it holds
// raw JSON (json.RawMessage) rather than a string.
type flatField struct {
	index int
	raw   bool
}

var flatCache sync.Map // reflect.Type -> map[string]flatField, nil when not flat

var rawMessage = reflect.TypeFor[json.RawMessage]()

// flatFields maps the JSON names of t's fields to them when t is a struct
// whose exported fields are all plain strings or json.RawMessage, each
// named by a json tag without options (nothing embedded, nothing
// unexported); nil for any other type.
func flatFields(t reflect.Type) map[string]flatField {
	if m, ok := flatCache.Load(t); ok {
		return m.(map[string]flatField)
	}
	var m map[string]flatField
	if t.Kind() == reflect.Struct {
		m = map[string]flatField{}
		for i := range t.NumField() {
			f := t.Field(i)
			name := f.Tag.Get("json")
			flat := f.IsExported() && !f.Anonymous && name != "" && name != "-" && !strings.Contains(name, ",") &&
				(f.Type == reflect.TypeFor[string]() || f.Type == rawMessage)
			if _, taken := m[name]; !flat || taken {
				m = nil
				break
			}
			m[name] = flatField{index: i, raw: f.Type == rawMessage}
		}
	}
	flatCache.Store(t, m)
	return m
}

// decodeMembers decodes the canonical JSON object c into v, a pointer to a
// flat struct, in one walk; ok is false (and nothing is done) for any other
// v. A key differing from a field's name only in case is refused as
// CheckFieldNames refuses it (path prefixes the names errors give); a value
// of the wrong type is refused as decodeCanonical or a webhook refuses it
// (webhook: "must be a string", with unknown keys tolerated; otherwise an
// unknown key is refused). The member named cut, if any, is not decoded but
// returned. Errors come in the order the general path finds them: a key's
// case first, then the first other error in the members' order.
func decodeMembers(c []byte, v any, path, cut string, webhook bool) (cutValue []byte, ok bool, err error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil, false, nil
	}
	fields := flatFields(rv.Elem().Type())
	if fields == nil {
		return nil, false, nil
	}
	s := rv.Elem()
	var caseErr, first error // the first key's case, the first other error
	for quoted, val := range canon.Members(c) {
		k := keyOf(quoted)
		if cut != "" && string(k) == cut {
			cutValue = val
			continue
		}
		if caseErr != nil {
			continue // only the member to cut is still looked for
		}
		f, known := fields[string(k)]
		if !known {
			ks := string(k)
			for name := range fields {
				if strings.EqualFold(ks, name) {
					caseErr = fault.Field(shorten(path+ks), "is not a known field (field names are exact: did you mean %s?)", path+name)
					break
				}
			}
			if caseErr != nil {
				continue
			}
			if !webhook && first == nil {
				// As encoding/json names it (json: unknown field %q).
				first = fault.Field(shorten(strings.Trim(fmt.Sprintf("%q", ks), `"`)), "is not a known field")
			}
			continue
		}
		if first != nil {
			continue // only a key's case may still come before it
		}
		fv := s.Field(f.index)
		switch {
		case f.raw:
			fv.SetBytes(val)
		case val[0] == '"':
			fv.SetString(stringOf(val))
		case string(val) != "null": // null leaves a string as it is, as encoding/json does
			first = fault.Field(string(k), "must be a string")
		}
	}
	if caseErr != nil {
		return cutValue, true, caseErr
	}
	return cutValue, true, first
}

// stringOf is the string a canonical JSON string spells.
func stringOf(quoted []byte) string {
	if bytes.IndexByte(quoted, '\\') < 0 {
		return string(quoted[1 : len(quoted)-1])
	}
	var s string
	_ = json.Unmarshal(quoted, &s) // canonical: always valid
	return s
}

// DecodeWebhook decodes a webhook's canonical JSON object c into v, whose
// fields are strings or raw JSON, in one walk: unknown keys are tolerated,
// a key differing from a field's name only in case is refused
// (CheckFieldNames), and a field that is not a string is refused as
// fault.Field(name, "must be a string"). ok is false (and nothing is done)
// when v is not a pointer to such a struct.
func DecodeWebhook(c []byte, v any) (ok bool, err error) {
	_, ok, err = decodeMembers(c, v, "", "", true)
	return ok, err
}
