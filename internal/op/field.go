package op

import (
	"encoding/json"
	"net/mail"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"golang.org/x/text/unicode/norm"

	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/phone"
)

// Text trims and NFC-normalises *v and checks its length in characters.
// required rejects an empty result.
func Text(field string, v *string, maxLen int, required bool) error {
	s := norm.NFC.String(strings.TrimSpace(*v))
	if required && s == "" {
		return fault.Field(field, "is required")
	}
	if utf8.RuneCountInString(s) > maxLen {
		return fault.Field(field, "must be at most %d characters", maxLen)
	}
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\t' {
			return fault.Field(field, "must not contain control characters")
		}
	}
	*v = s
	return nil
}

// ID checks that *v is a UUID and rewrites it in its canonical lower-case form.
func ID(field string, v *string) error {
	if strings.TrimSpace(*v) == "" {
		return fault.Field(field, "is required")
	}
	id, err := uuid.Parse(strings.TrimSpace(*v))
	if err != nil || len(strings.TrimSpace(*v)) != 36 {
		return fault.Field(field, "must be an id (UUID) returned by this API")
	}
	*v = id.String()
	return nil
}

// OptionalID is ID for a field that may be left out: an empty or blank *v
// becomes "" and is accepted.
func OptionalID(field string, v *string) error {
	if *v = strings.TrimSpace(*v); *v == "" {
		return nil
	}
	return ID(field, v)
}

// Time checks that *v is an RFC 3339 time and rewrites it in UTC, so that the
// same instant written in another zone is the same input.
func Time(field string, v *string) error {
	if strings.TrimSpace(*v) == "" {
		return fault.Field(field, "is required")
	}
	// RFC 3339 allows a lower-case t and z; Go's parser wants upper case.
	t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(strings.TrimSpace(*v)))
	if err != nil {
		return fault.Field(field, "must be an RFC 3339 time such as 2030-01-02T15:04:05Z")
	}
	*v = t.UTC().Format(time.RFC3339Nano)
	return nil
}

// MustUUID parses an id that Normalize already checked.
func MustUUID(s string) uuid.UUID { return uuid.MustParse(s) }

// OptionalUUID is MustUUID for an optional id field: uuid.Nil when it is empty.
func OptionalUUID(s string) uuid.UUID {
	if s == "" {
		return uuid.Nil
	}
	return uuid.MustParse(s)
}

// MaxPhoneLen is the longest phone number accepted as written, separators
// included.
const MaxPhoneLen = 32

// PhonePattern is the JSON Schema pattern of a phone field: exactly the
// values Phone accepts, written without surrounding whitespace. Struct tags
// cannot name a constant, so phone fields repeat it literally; a test
// checks every tool's phone property against it.
const PhonePattern = `^(\+|[ .()-]*0[ .()-]*0)[ .()-]*[1-9]([ .()-]*[0-9]){7,14}[ .()-]*$`

// Phone checks that *v is a phone number and rewrites it in E.164 form
// (+ and 8 to 15 digits), so that "+44 20 7946 0958", "0044 (20) 7946-0958"
// and "+442079460958" are the same input. Spaces, dashes, dots and
// parentheses are dropped; a leading 00 is the international prefix. A
// national number without a country code is refused rather than guessed
// (PhonePattern, the tools' schema, says as much); of the numbers it
// matches, libphonenumber refuses those no country could have.
func Phone(field string, v *string) error {
	s := strings.TrimSpace(*v)
	if s == "" {
		return fault.Field(field, "is required")
	}
	if utf8.RuneCountInString(s) > MaxPhoneLen {
		return fault.Field(field, "must be at most %d characters", MaxPhoneLen)
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '+' && i == 0:
			b.WriteRune(r)
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == ' ' || r == '-' || r == '.' || r == '(' || r == ')':
		default:
			return fault.Field(field, "must be a phone number in international form such as +442079460958")
		}
	}
	n := b.String()
	if rest, ok := strings.CutPrefix(n, "00"); ok && !strings.HasPrefix(n, "+") {
		n = "+" + rest
	}
	digits, ok := strings.CutPrefix(n, "+")
	if !ok || len(digits) < 8 || len(digits) > 15 || digits[0] == '0' {
		return fault.Field(field, "must be a phone number in international form (E.164) such as +442079460958")
	}
	// The numbering plans are libphonenumber's to know: a country code no
	// country has, or a length the country never uses, is no number; a
	// national trunk prefix written after the country code ("+44 (0)20")
	// is not part of it.
	e164, ok := phone.International(n)
	if !ok {
		return fault.Field(field, "is not a phone number of any country (its country code, or its length for that country): give it in international form such as +442079460958")
	}
	*v = e164
	return nil
}

// MaxEmailLen is the longest e-mail address accepted (RFC 5321 path limit).
const MaxEmailLen = 254

// Email checks that *v is one plain e-mail address (no display name) and
// rewrites it lower-cased: mail systems treat addresses case-insensitively in
// practice, and an agent's rephrasing must not make it a different recipient.
func Email(field string, v *string) error {
	s := strings.TrimSpace(*v)
	if s == "" {
		return fault.Field(field, "is required")
	}
	if len(s) > MaxEmailLen {
		return fault.Field(field, "must be at most %d characters", MaxEmailLen)
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s {
		return fault.Field(field, "must be an e-mail address such as ana@example.com")
	}
	_, domain, _ := strings.Cut(a.Address, "@")
	if !strings.Contains(domain, ".") || strings.HasPrefix(domain, "[") {
		return fault.Field(field, "must be an e-mail address with a domain name such as ana@example.com")
	}
	*v = strings.ToLower(a.Address)
	return nil
}

// Currency checks that *v is an active ISO 4217 alphabetic code (in any
// case) and rewrites it upper-case.
func Currency(field string, v *string) error {
	s := strings.ToUpper(strings.TrimSpace(*v))
	if s == "" {
		return fault.Field(field, "is required")
	}
	if !IsCurrency(s) {
		return fault.Field(field, "must be an ISO 4217 currency code such as EUR or USD")
	}
	*v = s
	return nil
}

// MaxAmount is the largest amount accepted: 2^53-1, the largest integer
// every JSON client represents exactly.
const MaxAmount = 1<<53 - 1

// Amount checks that *v is a whole number of minor units (cents) from 1 to
// MaxAmount. An absent amount is an error only when required.
func Amount(field string, v *Integer, required bool) error {
	if *v == "" && !required {
		return nil
	}
	return Int(field, v, 1, MaxAmount)
}

// Int checks that *v is present and an integer within [lo, hi].
func Int(field string, v *Integer, lo, hi int64) error {
	if *v == "" {
		return fault.Field(field, "is required")
	}
	s := string(*v)
	if strings.ContainsAny(s, ".eE") {
		return fault.Field(field, "must be a whole number")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil && strings.HasPrefix(s, "-"), err == nil && n < lo:
		return fault.Field(field, "must be at least %d", lo)
	case err != nil, n > hi:
		return fault.Field(field, "must be at most %d", hi)
	}
	*v = Integer(strconv.FormatInt(n, 10))
	return nil
}

// Integer is a JSON integer input field, kept as its literal so that range
// checks see the exact value (never a float64). Unlike json.Number it
// refuses a quoted string: "100" is not the number 100. The empty Integer
// means the field was absent (or null).
type Integer string

// Int64 returns the value of an Integer that Int or Amount checked.
func (n Integer) Int64() int64 {
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		panic("op: unchecked integer " + string(n))
	}
	return v
}

// UnmarshalJSON accepts a JSON number or null.
func (n *Integer) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		*n = ""
	case len(b) > 0 && (b[0] == '-' || (b[0] >= '0' && b[0] <= '9')):
		*n = Integer(b)
	default:
		return &json.UnmarshalTypeError{Value: "non-number", Type: reflect.TypeFor[int64]()}
	}
	return nil
}

// MarshalJSON writes the literal, or null when absent.
func (n Integer) MarshalJSON() ([]byte, error) {
	if n == "" {
		return []byte("null"), nil
	}
	return []byte(n), nil
}

// IsZero makes an absent Integer disappear under the omitzero option.
func (n Integer) IsZero() bool { return n == "" }

// JSONSchema describes the field for Schema.
func (Integer) JSONSchema() map[string]any { return map[string]any{"type": "integer"} }

// Patch is a string field of a partial update, which has three states that
// plain Go strings and pointers cannot tell apart: absent (leave the value
// alone), null (clear it) and a value (set it). Use it with the omitzero
// option so that an absent field stays absent in the normalised input.
type Patch struct {
	// Set is true when the field was present in the input, even as null.
	Set bool
	// Null is true when the field was present as JSON null.
	Null  bool
	Value string
}

// UnmarshalJSON accepts a JSON string or null.
func (p *Patch) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*p = Patch{Set: true, Null: true}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &json.UnmarshalTypeError{Value: "non-string", Type: reflect.TypeFor[string]()}
	}
	*p = Patch{Set: true, Value: s}
	return nil
}

// MarshalJSON writes the value, or null when cleared.
func (p Patch) MarshalJSON() ([]byte, error) {
	if p.Null || !p.Set {
		return []byte("null"), nil
	}
	return json.Marshal(p.Value)
}

// IsZero is true when the field was absent.
func (p Patch) IsZero() bool { return !p.Set }

// JSONSchema describes the field for Schema.
func (Patch) JSONSchema() map[string]any { return map[string]any{"type": []string{"string", "null"}} }

// Identity renders the patch for an identity list: absent, null and each
// value all render differently.
func (p Patch) Identity(field string) string {
	switch {
	case !p.Set:
		return ""
	case p.Null:
		return field + "=null"
	}
	return field + "=" + strconv.Quote(p.Value)
}
