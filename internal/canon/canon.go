// Package canon owns the canonical JSON form of webhook request bodies and
// the request fingerprints derived from it.
//
// Two requests carry the same effect exactly when their effect-bearing fields
// have the same canonical JSON, so the canonical form must erase every
// difference that does not change meaning (property order, whitespace, number
// spelling, escape choice, Unicode normalisation form) and keep every
// difference that does. Input is untrusted, so parsing is strict RFC 8259 with
// explicit resource limits rather than the lenient behaviour of encoding/json.
package canon

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
)

// Limits on accepted input. They bound the time and memory spent on a single
// untrusted request and keep every accepted value small enough to hash and
// store cheaply.
const (
	// MaxDepth is the deepest nesting of arrays and objects accepted; a
	// top-level array holding an object is depth 2. It is checked before
	// descending, so hostile nesting costs no more than MaxDepth frames.
	MaxDepth = 32

	// MaxNumberLen bounds the precision of a number: it may have at most this
	// many significant digits (leading and trailing zeros that only place the
	// decimal point do not count). The literal itself may be up to
	// MaxNumberLen+MaxExponent+2 characters long, which is exactly the
	// longest canonical form of an acceptable number; anything shorter would
	// make Canonical reject its own output (1e64 canonicalises to 65 digits).
	MaxNumberLen = 64

	// MaxExponent bounds the magnitude of a number: both the exponent as
	// written and the decimal exponent of the value's leading digit must be
	// within ±MaxExponent. So 1e64 is accepted and 1e65 and 10e64 are not;
	// every accepted number fits in a short decimal string.
	MaxExponent = 64

	// MaxStringLen is the longest string (object key or value) accepted, in
	// bytes of UTF-8 after unescaping and NFC normalisation.
	MaxStringLen = 64 << 10

	// MaxInputLen is the largest input accepted, in bytes. The canonical form
	// is held to the same bound, so that canonical output is always itself
	// acceptable input.
	MaxInputLen = 1 << 20
)

// maxNumberLiteral is the longest number literal accepted: a negative value
// whose leading digit is at 10^-MaxExponent and which has MaxNumberLen
// significant digits is written "-0." + (MaxExponent-1) zeros + MaxNumberLen
// digits.
const maxNumberLiteral = MaxNumberLen + MaxExponent + 2

// maxQuotedLen is how much of a key an error message repeats. Key names help
// debugging, but an error must not become a vehicle for large input.
const maxQuotedLen = 64

// Error describes why input is not acceptable JSON.
type Error struct {
	// Path is a JSON-pointer-like location of the problem, such as
	// "/arguments/slot_id", or "" for the root or when unknown.
	Path string
	// Reason says what is wrong. It never contains input values; it may
	// contain an object key truncated to 64 bytes.
	Reason string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return "invalid JSON: " + e.Reason
	}
	return "invalid JSON at " + e.Path + ": " + e.Reason
}

// Canonical parses untrusted JSON and returns its canonical form:
//
//   - object keys sorted by their UTF-8 bytes after NFC normalisation, and no
//     insignificant whitespace;
//   - strings NFC-normalised and re-encoded with minimal escaping: only '"',
//     '\\' and control characters below U+0020 are escaped, using \n \r \t \b
//     \f where possible and \u00XX otherwise;
//   - numbers as their exact decimal value with no exponent, no leading
//     zeros, no trailing fractional zeros and no "-0", so 1, 1.0, 1e0, 10E-1
//     and 0.1e1 all become 1;
//   - true, false and null unchanged.
//
// It returns an *Error for invalid JSON, invalid UTF-8 anywhere in the input,
// a lone surrogate escape, duplicate object keys (including keys that are
// equal only after NFC normalisation), data after the top-level value, and
// input beyond the limits above.
func Canonical(data []byte) ([]byte, error) {
	if len(data) > MaxInputLen {
		return nil, &Error{Reason: fmt.Sprintf("input is %d bytes, more than the limit of %d", len(data), MaxInputLen)}
	}
	p := parser{in: data, out: make([]byte, 0, len(data))}
	if err := p.parse(); err != nil {
		return nil, err
	}
	return p.out, nil
}

// Fingerprint returns the hex SHA-256 of operation, a NUL byte, the decimal
// schema version, a NUL byte and canonical.
//
// canonical must already be the output of Canonical or Marshal; it is hashed
// as given, because re-canonicalising on every call would cost a parse on
// the hot path. Canonical JSON never contains a raw NUL (control characters
// are escaped), so the last NUL separates it unambiguously from the prefix
// and distinct (operation, version, canonical) triples cannot hash the same
// bytes.
func Fingerprint(operation string, version int, canonical []byte) string {
	h := sha256.New()
	h.Write([]byte(operation))
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, int64(version), 10))
	h.Write([]byte{0})
	h.Write(canonical)
	return hex.EncodeToString(h.Sum(nil))
}

// Marshal encodes v with encoding/json and returns the canonical form of the
// result. It is meant for values that are already normalised structs. Note
// that encoding/json replaces invalid UTF-8 in Go strings with U+FFFD rather
// than failing, so such strings fingerprint as if they contained U+FFFD.
func Marshal(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canon: marshal: %w", err)
	}
	return Canonical(data)
}
