package canon

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// flat is shaped like an operation's input: string fields only.
type flat struct {
	SlotID     string `json:"slot_id"`
	CustomerID string `json:"customer_id"`
	Service    string `json:"service,omitempty"`
	Note       string `json:"note,omitzero"`
	Plain      string
	Code       code   `json:"code"`
	Skipped    string `json:"-"`
	hidden     string //nolint:unused // unexported: encoding/json ignores it
}

type code string

type withNumber struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

type marshalsItself string

func (m marshalsItself) MarshalJSON() ([]byte, error) { return json.Marshal("x" + string(m)) }

type withMethod struct {
	Name marshalsItself `json:"name"`
}

type zeroByMethod string

func (z zeroByMethod) IsZero() bool { return z == "none" }

type withIsZero struct {
	Name zeroByMethod `json:"name,omitzero"`
}

type inner struct {
	A string `json:"a"`
}

type embeds struct {
	inner
	B string `json:"b"`
}

type stringOption struct {
	N string `json:"n,string"`
}

// dupNames has two fields named X; encoding/json keeps the tagged one.
type dupNames struct {
	X string
	A string `json:"X"`
}

// The direct path must write exactly Marshal's bytes, and take Marshal's
// path for every type it cannot vouch for.
func TestEncoderMatchesMarshal(t *testing.T) {
	t.Parallel()
	strs := []string{
		"", "plain", "a<b>&c", "tab\tnew\nline\r\x00\x1f\x7f", `quote " and \ backslash`,
		"line\u2028sep\u2029", "Zoë Ångström", "e\u0301", "\xff\xfe", "\u00e9",
		strings.Repeat("x", MaxStringLen), strings.Repeat("x", MaxStringLen+1),
	}
	type typed struct {
		v      func(s string) any
		direct bool
	}
	types := map[string]typed{
		"flat": {func(s string) any {
			return flat{SlotID: s, CustomerID: "c", Service: s, Note: s, Plain: s, Code: code(s), Skipped: s, hidden: s}
		}, true},
		"flat pointer":  {func(s string) any { return &flat{SlotID: s} }, true},
		"nil pointer":   {func(string) any { return (*flat)(nil) }, true},
		"number":        {func(s string) any { return withNumber{Name: s, Count: 3} }, false},
		"MarshalJSON":   {func(s string) any { return withMethod{Name: marshalsItself(s)} }, false},
		"IsZero":        {func(s string) any { return withIsZero{Name: zeroByMethod(s)} }, false},
		"embedded":      {func(s string) any { return embeds{inner: inner{A: s}, B: s} }, false},
		"string option": {func(s string) any { return stringOption{N: s} }, false},
		"duplicate":     {func(s string) any { return dupNames{X: s, A: "a" + s} }, false},
	}
	for name, ty := range types {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			typ := reflect.TypeOf(ty.v(""))
			if typ.Kind() == reflect.Pointer {
				typ = typ.Elem()
			}
			e := NewEncoder(typ)
			if got := e.fields != nil; got != ty.direct {
				t.Fatalf("direct path for %v: %v, want %v", typ, got, ty.direct)
			}
			for _, s := range strs {
				same(t, e, ty.v(s))
			}
		})
	}
	// A value of another type than the encoder's is still encoded right.
	same(t, NewEncoder(reflect.TypeFor[flat]()), withNumber{Name: "n"})
}

func same(t *testing.T, e *Encoder, v any) {
	t.Helper()
	want, wantErr := Marshal(v)
	got, err := e.Marshal(v)
	if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
		t.Errorf("Encoder.Marshal(%.80v) = %.100q, %v; Marshal gives %.100q, %v", v, got, err, want, wantErr)
	}
}

// FuzzEncoder compares the direct path with Marshal for any strings.
func FuzzEncoder(f *testing.F) {
	f.Add("0197a3b0-0000-7000-8000-000000000001", "", "a<b")
	f.Add("e\u0301", "\xff", "\u2028\"\\\n")
	e := NewEncoder(reflect.TypeFor[flat]())
	f.Fuzz(func(t *testing.T, a, b, c string) {
		same(t, e, flat{SlotID: a, CustomerID: b, Service: c, Note: a, Plain: b, Code: code(c)})
	})
}
