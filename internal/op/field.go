package op

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"golang.org/x/text/unicode/norm"

	"github.com/oncecall/oncecall/internal/fault"
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

// OptionalID is ID for a field that may be empty.
func OptionalID(field string, v *string) error {
	if strings.TrimSpace(*v) == "" {
		*v = ""
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
