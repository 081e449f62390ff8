package canon

import (
	"cmp"
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Encoder writes the canonical form of values of one Go type, the same bytes
// as Marshal. Marshal encodes with encoding/json and parses the result again;
// every request pays for that, a replay included, although the fingerprint
// only needs the canonical bytes. For a struct of plain string fields (most
// operation inputs) the Encoder writes those bytes directly: fields in key
// order, each string with canonical escaping. Any other type, and any value
// the direct path cannot vouch for, goes through Marshal.
type Encoder struct {
	t reflect.Type
	// fields in canonical (key) order; nil when the type takes Marshal's path.
	fields []stringField
}

// stringField is one string field of a struct and its encoded key.
type stringField struct {
	index     int
	key       string // `"name":`
	omitEmpty bool
}

// maxDirect bounds the output of the direct path. encoding/json's form of a
// string is at most six times its canonical form (a '<' becomes \u003c), so
// below this size Marshal's input limit could not have rejected it either.
const maxDirect = MaxInputLen / 8

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// NewEncoder returns the encoder of values of type t.
func NewEncoder(t reflect.Type) *Encoder {
	e := &Encoder{t: t}
	if t.Kind() != reflect.Struct || implementsMarshaler(t) {
		return e
	}
	fields := make([]stringField, 0, t.NumField())
	seen := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opt, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		// Embedded structs, other kinds, string types with methods (a
		// MarshalJSON, an IsZero for omitzero), options such as ",string",
		// and names encoding/json would treat specially take Marshal's path.
		if f.Anonymous || f.Type.Kind() != reflect.String || reflect.PointerTo(f.Type).NumMethod() > 0 ||
			(opt != "" && opt != "omitempty" && opt != "omitzero") || !plainName(name) || seen[name] {
			return e
		}
		seen[name] = true
		fields = append(fields, stringField{index: i, key: `"` + name + `":`, omitEmpty: opt != ""})
	}
	// Keys are ASCII, which is its own NFC form: byte order is key order.
	slices.SortFunc(fields, func(a, b stringField) int { return cmp.Compare(a.key, b.key) })
	e.fields = fields
	return e
}

func implementsMarshaler(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(marshalerType) || t.Implements(textMarshalerType) ||
		p.Implements(marshalerType) || p.Implements(textMarshalerType)
}

// plainName reports whether a field's JSON name is ASCII letters, digits and
// underscores, which encoding/json and the canonical form write unescaped.
func plainName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || isDigit(c) || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')) {
			return false
		}
	}
	return name != ""
}

// Marshal returns the canonical form of v, which must be of the encoder's
// type (or a pointer to it); the result is Marshal(v).
func (e *Encoder) Marshal(v any) ([]byte, error) {
	if e.fields == nil {
		return Marshal(v)
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv = rv.Elem()
	}
	if !rv.IsValid() || rv.Type() != e.t {
		return Marshal(v)
	}
	out := make([]byte, 0, 128)
	out = append(out, '{')
	for _, f := range e.fields {
		s := rv.Field(f.index).String()
		if s == "" && f.omitEmpty {
			continue
		}
		// encoding/json replaces invalid UTF-8, and the canonical form
		// normalises to NFC: strings that need either take the long way.
		if len(s) > MaxStringLen || !validNFC(s) {
			return Marshal(v)
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, f.key...)
		out = appendString(out, s)
		if len(out) > maxDirect {
			return Marshal(v)
		}
	}
	return append(out, '}'), nil
}

// validNFC reports whether s is valid UTF-8 in NFC. ASCII, which ids and
// enums are, is both.
func validNFC(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return utf8.ValidString(s) && norm.NFC.IsNormalString(s)
		}
	}
	return true
}
