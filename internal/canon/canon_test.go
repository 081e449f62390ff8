package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"
)

type pair struct {
	name string
	a, b string
}

// equivalentPairs must canonicalise to identical bytes.
func equivalentPairs() []pair {
	return []pair{
		{"property order", `{"a":1,"b":2}`, `{"b":2,"a":1}`},
		{"whitespace", `{"a":[1,2],"b":true}`, " {\n\t\"a\" : [ 1 , 2 ] ,\r\n \"b\":true } \n"},
		{"1 vs 1.0", `1`, `1.0`},
		{"1 vs 1e0", `1`, `1e0`},
		{"1 vs 10E-1", `1`, `10E-1`},
		{"1 vs 0.1e1", `1`, `0.1e1`},
		{"100 vs 1e2", `100`, `1E+2`},
		{"0 vs -0", `0`, `-0`},
		{"0 vs -0.0e7", `0`, `-0.0e7`},
		{"trailing fractional zeros", `1.5`, `1.50000`},
		{"precomposed vs decomposed", `"é"`, `"e\u0301"`},
		{"raw decomposed vs escaped precomposed", "\"e\u0301\"", `"\u00e9"`},
		{"decomposed key", `{"café":1}`, `{"cafe\u0301":1}`},
		{"unicode escape", `"A"`, `"\u0041"`},
		{"escaped solidus", `"a/b"`, `"a\/b"`},
		{"escape forms", `"\n\u0001"`, `"\u000a\u0001"`},
		{"surrogate pair", `"😀"`, `"\ud83d\ude00"`},
		{"html characters stay raw", `"<&>"`, `"\u003c\u0026\u003e"`},
		{
			"nested objects in different order",
			`{"booking":{"slot":{"id":"slot_1","start":"10:00"},"party":2},"op":"book"}`,
			`{"op":"book","booking":{"party":2,"slot":{"start":"10:00","id":"slot_1"}}}`,
		},
		{"objects inside arrays", `[{"b":1,"a":2},{"d":3,"c":4}]`, `[{"a":2,"b":1},{"c":4,"d":3}]`},
		{"combining mark order", "\"a\u0301\u0316\"", `"a\u0316\u0301"`},
		// Over 30 combining marks make x/text insert U+034F (stream-safe
		// format); the result must still be stable.
		{"long combining sequence", `"a` + strings.Repeat("\u0301", 40) + `"`, `"a` + strings.Repeat(`\u0301`, 40) + `"`},
	}
}

// distinctPairs must canonicalise to different bytes.
func distinctPairs() []pair {
	return []pair{
		{"changed slot", `{"slot_id":"slot_1"}`, `{"slot_id":"slot_2"}`},
		{"1 vs 2", `1`, `2`},
		{"1.5 vs 1.05", `1.5`, `1.05`},
		{"1.5 vs 15", `1.5`, `15`},
		{"0.1 vs 0.01", `0.1`, `1e-2`},
		{"sign", `1`, `-1`},
		{"large values beyond float64 precision", `9007199254740993`, `9007199254740992`},
		{"tiny differences", `1.0000000000000000000000000001`, `1`},
		{"trailing space", `"a"`, `"a "`},
		{"case", `"a"`, `"A"`},
		{"bool vs string", `true`, `"true"`},
		{"number vs string", `1`, `"1"`},
		{"array order", `[1,2]`, `[2,1]`},
		{"null vs missing key", `{"a":1,"b":null}`, `{"a":1}`},
		{"null vs false", `null`, `false`},
		{"empty array vs empty object", `[]`, `{}`},
		{"key vs value", `{"a":"b"}`, `{"b":"a"}`},
		{"nesting", `[[1]]`, `[1]`},
		{"compatibility forms are not folded", `"ﬁ"`, `"fi"`},
	}
}

// exactCases pin the canonical bytes for some inputs.
func exactCases() []struct{ in, want string } {
	return []struct{ in, want string }{
		{`{ "b" : [ 1.0 , 1e2 , -0 ] , "a" : null }`, `{"a":null,"b":[1,100,0]}`},
		{`[1, 1.0, 1e0, 10E-1, 0.1e1, -0, 0.0, 1.50, 1e2, 12.5e-1, -12.5E-3]`, `[1,1,1,1,1,0,0,1.5,100,1.25,-0.0125]`},
		{`[true,false,null]`, `[true,false,null]`},
		{`"a\"b\\c\/d\b\f\n\r\t\u0000\u001f\u007f"`, "\"a\\\"b\\\\c/d\\b\\f\\n\\r\\t\\u0000\\u001f\x7f\""},
		{`"e\u0301 \u2028 😀"`, "\"é \u2028 😀\""},
		{`{"z":{"y":{},"x":[]},"é":"e\u0301","e":1}`, `{"e":1,"z":{"x":[],"y":{}},"é":"é"}`},
		{`{"B":1,"a":2,"":3,"aa":4}`, `{"":3,"B":1,"a":2,"aa":4}`},
		{`1e64`, "1" + strings.Repeat("0", 64)},
		{`-1e-64`, "-0." + strings.Repeat("0", 63) + "1"},
		{"  \"x\"\n", `"x"`},
	}
}

// rejectCases must fail with an *Error whose Reason contains reason and whose
// Path is path.
func rejectCases() []struct{ name, in, reason, path string } {
	return []struct{ name, in, reason, path string }{
		{"empty input", ``, "empty input", ""},
		{"only whitespace", " \n", "no value", ""},
		{"duplicate key", `{"a":1,"b":2,"a":3}`, `duplicate key "a"`, ""},
		{"nested duplicate key", `{"args":{"x":1,"x":1}}`, `duplicate key "x"`, "/args"},
		{"NFC duplicate key", `{"é":1,"e\u0301":2}`, `duplicate key "é"`, ""},
		{"invalid UTF-8 in string", "{\"a\":\"\xff\"}", "invalid UTF-8", "/a"},
		{"invalid UTF-8 in key", "{\"\xc3\":1}", "invalid UTF-8", ""},
		{"invalid UTF-8 outside string", "[1,\xff]", "invalid UTF-8", "/1"},
		{"UTF-8 encoded surrogate", "\"\xed\xa0\x80\"", "invalid UTF-8", ""},
		{"overlong UTF-8", "\"\xc0\xaf\"", "invalid UTF-8", ""},
		{"trailing garbage", `{"a":1} x`, "after the top-level value", ""},
		{"two values", `1 2`, "after the top-level value", ""},
		{"ten-thousand digit number", strings.Repeat("7", 10000), "number literal", ""},
		{"too many significant digits", strings.Repeat("7", MaxNumberLen+1), "significant digits", ""},
		{"exponent 1e400", `[1e400]`, "exponent", "/0"},
		{"exponent 1e65", `1e65`, "exponent", ""},
		{"exponent -65", `1e-65`, "exponent", ""},
		{"magnitude beyond limit", `10e64`, "magnitude", ""},
		{"huge exponent digits", `1e99999999999999999999999`, "exponent", ""},
		{"leading zero", `{"n":01}`, "leading zero", "/n"},
		{"leading zero negative", `-012`, "leading zero", ""},
		{"plus sign", `+1`, "unexpected character '+'", ""},
		{"bare fraction", `.5`, "unexpected character '.'", ""},
		{"missing fraction digits", `1.`, "after '.'", ""},
		{"missing exponent digits", `1e+`, "exponent", ""},
		{"minus alone", `-`, "invalid number", ""},
		{"NaN", `NaN`, "unexpected character 'N'", ""},
		{"Infinity", `-Infinity`, "invalid number", ""},
		{"single quotes", `{'a':1}`, "expected string key", ""},
		{"lone high surrogate", `"\ud800"`, "lone surrogate", ""},
		{"lone low surrogate", `"\udc00"`, "lone surrogate", ""},
		{"high surrogate then non-surrogate", `"\ud800\u0041"`, "lone surrogate", ""},
		{"reversed surrogates", `"\ude00\ud83d"`, "lone surrogate", ""},
		{"unescaped control char", "[\"a\tb\"]", "unescaped control character", "/0"},
		{"unescaped NUL", "\"\x00\"", "unescaped control character", ""},
		{"bad escape", `"\x41"`, "invalid escape", ""},
		{"short unicode escape", `"\u12"`, `invalid \u escape`, ""},
		{"unterminated string", `"abc`, "unterminated string", ""},
		{"unterminated object", `{"a":1`, "end of input", ""},
		{"unterminated array", `[1,2`, "end of input", ""},
		{"trailing comma", `[1,2,]`, "unexpected character ']'", "/2"},
		{"missing colon", `{"a" 1}`, "expected ':'", ""},
		{"non-string key", `{1:2}`, "expected string key", ""},
		{"truncated literal", `tru`, "unexpected character 't'", ""},
		{"capitalised literal", `True`, "unexpected character 'T'", ""},
		{"byte order mark", "\ufeff{}", "unexpected non-ASCII", ""},
		{"key with slash and tilde in path", `{"a/b~c":[x]}`, "unexpected character 'x'", "/a~1b~0c/0"},
	}
}

func TestCanonicalEquivalent(t *testing.T) {
	t.Parallel()
	for _, tc := range equivalentPairs() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := mustCanonical(t, tc.a)
			b := mustCanonical(t, tc.b)
			if !bytes.Equal(a, b) {
				t.Errorf("Canonical(%q) = %s, Canonical(%q) = %s; want equal", tc.a, a, tc.b, b)
			}
		})
	}
}

func TestCanonicalDistinct(t *testing.T) {
	t.Parallel()
	for _, tc := range distinctPairs() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := mustCanonical(t, tc.a)
			b := mustCanonical(t, tc.b)
			if bytes.Equal(a, b) {
				t.Errorf("Canonical(%q) and Canonical(%q) are both %s; want different", tc.a, tc.b, a)
			}
		})
	}
}

func TestCanonicalExact(t *testing.T) {
	t.Parallel()
	for _, tc := range exactCases() {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			if got := mustCanonical(t, tc.in); string(got) != tc.want {
				t.Errorf("Canonical(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

// TestCanonicalNumbersExact checks number canonicalisation against math/big:
// the canonical form must denote exactly the same rational as the input.
func TestCanonicalNumbersExact(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"0", "-0", "7", "-7", "0.5", "-0.5", "1.25", "12.5e-1", "1e2", "1E+2", "1e-2",
		"123456789012345678901234567890", "0.000000000000000000001", "9007199254740993",
		"1.7976931348623157e30", "4.9e-32", "3.14159265358979323846264338327950288419716939937510",
		"100e-2", "0.00100e3", "-98765.4321000e-10", "1e64", "1e-64", "9.99e63",
		strings.Repeat("9", MaxNumberLen), "0." + strings.Repeat("0", 63) + strings.Repeat("9", MaxNumberLen),
	} {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			want, ok := new(big.Rat).SetString(in)
			if !ok {
				t.Fatalf("math/big cannot parse %q", in)
			}
			out := mustCanonical(t, in)
			if bytes.ContainsAny(out, "eE+") {
				t.Errorf("Canonical(%q) = %s, contains an exponent", in, out)
			}
			got, ok := new(big.Rat).SetString(string(out))
			if !ok || got.Cmp(want) != 0 {
				t.Errorf("Canonical(%q) = %s, not the same value", in, out)
			}
		})
	}
}

// TestCanonicalIdempotent checks, for every accepted table input, the
// property the fuzzer checks for arbitrary input.
func TestCanonicalIdempotent(t *testing.T) {
	t.Parallel()
	for _, in := range corpus() {
		out, err := Canonical(in)
		if err != nil {
			continue
		}
		again, err := Canonical(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Errorf("Canonical(%q) = %q, then %q, %v", in, out, again, err)
		}
	}
}

func TestCanonicalRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range rejectCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if e := assertRejected(t, []byte(tc.in), tc.reason); e.Path != tc.path {
				t.Errorf("Canonical(%.60q) path %q, want %q", tc.in, e.Path, tc.path)
			}
		})
	}
}

func TestCanonicalLimits(t *testing.T) {
	t.Parallel()
	nested := func(n int) []byte {
		return []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
	}
	str := func(n int) []byte { return []byte(`"` + strings.Repeat("x", n) + `"`) }

	accepted := []struct {
		name string
		in   []byte
	}{
		{"depth at limit", nested(MaxDepth)},
		{"object depth at limit", []byte(strings.Repeat(`{"a":`, MaxDepth) + "1" + strings.Repeat("}", MaxDepth))},
		{"string at limit", str(MaxStringLen)},
		{"escaped string decoding to the limit", []byte(`"` + strings.Repeat(`\n`, MaxStringLen) + `"`)},
		{"significant digits at limit", []byte(strings.Repeat("9", MaxNumberLen))},
		{"longest number literal", []byte("-0." + strings.Repeat("0", MaxExponent-1) + strings.Repeat("9", MaxNumberLen))},
		{"input at limit", []byte(`"` + strings.Repeat("x", MaxStringLen-2) + `"` + strings.Repeat(" ", MaxInputLen-MaxStringLen))},
	}
	for _, tc := range accepted {
		if _, err := Canonical(tc.in); err != nil {
			t.Errorf("%s: unexpected error %v", tc.name, err)
		}
	}

	if e := assertRejected(t, nested(MaxDepth+1), "nesting deeper than 32"); e.Path != strings.Repeat("/0", MaxDepth) {
		t.Errorf("deep nesting path %q", e.Path)
	}
	assertRejected(t, str(MaxStringLen+1), "string is 65537 bytes")
	assertRejected(t, []byte(strings.Repeat(" ", MaxInputLen+1)), "more than the limit")

	// Short literals that expand (1e64 is 65 bytes) must not let the
	// canonical form outgrow the input limit.
	many := "[" + strings.Repeat("1e64,", MaxInputLen/5-1) + "1]"
	assertRejected(t, []byte(many), "canonical form is longer")
}

// TestCanonicalDeepNesting guards against stack exhaustion and slow failure
// on hostile nesting.
func TestCanonicalDeepNesting(t *testing.T) {
	t.Parallel()
	for _, open := range []string{"[", `{"a":`, `[{"a":`} {
		in := []byte(strings.Repeat(open, 100_000))
		start := time.Now()
		assertRejected(t, in, "nesting deeper than")
		if d := time.Since(start); d > time.Second {
			t.Errorf("rejecting 100,000 × %q took %v", open, d)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	t.Parallel()
	_, err := Canonical([]byte(`{"a":{"b":{"x":1,"x":2}}}`))
	if got, want := err.Error(), `invalid JSON at /a/b: duplicate key "x"`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	_, err = Canonical(nil)
	if got, want := err.Error(), "invalid JSON: empty input"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}

	// Keys are truncated in both the reason and the path; values never
	// appear at all.
	long := strings.Repeat("k", 1000)
	secret := "s3cr3t-value"
	_, err = Canonical([]byte(`{"` + long + `":"` + secret + `","` + long + `":{"v":[1,` + secret + `]}}`))
	msg := err.Error()
	if strings.Contains(msg, strings.Repeat("k", 65)) || strings.Contains(msg, secret) {
		t.Errorf("Error() leaks input: %q", msg)
	}
	if !strings.Contains(msg, strings.Repeat("k", 64)) {
		t.Errorf("Error() = %q, want the key truncated to 64 bytes", msg)
	}

	// Truncation must not split a multi-byte character.
	_, err = Canonical([]byte(`{"` + strings.Repeat("é", 100) + `":1,"` + strings.Repeat("é", 100) + `":2}`))
	if msg := err.Error(); !strings.Contains(msg, `"`+strings.Repeat("é", 32)+`"...`) {
		t.Errorf("Error() = %q, want 32 whole characters", msg)
	}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	c := mustCanonical(t, `{"slot_id":"slot_1","party":2}`)

	base := Fingerprint("book_slot", 1, c)
	if got := Fingerprint("book_slot", 1, c); got != base {
		t.Errorf("Fingerprint is not deterministic: %s vs %s", got, base)
	}
	if Fingerprint("cancel_slot", 1, c) == base {
		t.Error("different operation gave the same fingerprint")
	}
	if Fingerprint("book_slot", 2, c) == base {
		t.Error("different version gave the same fingerprint")
	}
	if Fingerprint("book_slot", 1, mustCanonical(t, `{"slot_id":"slot_2","party":2}`)) == base {
		t.Error("different arguments gave the same fingerprint")
	}
	// The separators keep field boundaries unambiguous.
	if Fingerprint("book_slot1", 1, c) == Fingerprint("book_slot", 11, c) {
		t.Error("operation and version boundary is ambiguous")
	}

	// Pinned: changing this value changes every stored fingerprint.
	const want = "54f61eabdca4fd974969eaea7a26280a0140a06cfd3f34db790d59020e80330f"
	if base != want {
		t.Errorf("Fingerprint(book_slot, 1, %s) = %s, want %s", c, base, want)
	}
}

func TestMarshal(t *testing.T) {
	t.Parallel()
	type slot struct {
		ID    string  `json:"slot_id"`
		Party int     `json:"party"`
		Price float64 `json:"price"`
		Note  string  `json:"note"`
	}
	got, err := Marshal(slot{ID: "slot_1", Party: 2, Price: 12.5, Note: "<e\u0301>"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"note":"<é>","party":2,"price":12.5,"slot_id":"slot_1"}`; string(got) != want {
		t.Errorf("Marshal = %s, want %s", got, want)
	}
	viaMap, err := Marshal(map[string]any{"slot_id": "slot_1", "party": 2, "price": 12.50, "note": "<é>"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, viaMap) {
		t.Errorf("struct and map gave %s and %s", got, viaMap)
	}
	if _, err := Marshal(func() {}); err == nil {
		t.Error("Marshal(func) succeeded")
	}
}

// corpus returns every table input, to seed the fuzzer.
func corpus() [][]byte {
	var all [][]byte
	for _, tc := range equivalentPairs() {
		all = append(all, []byte(tc.a), []byte(tc.b))
	}
	for _, tc := range distinctPairs() {
		all = append(all, []byte(tc.a), []byte(tc.b))
	}
	for _, tc := range exactCases() {
		all = append(all, []byte(tc.in))
	}
	for _, tc := range rejectCases() {
		if len(tc.in) < 1000 {
			all = append(all, []byte(tc.in))
		}
	}
	return append(all, []byte(bookingPayload))
}

func FuzzCanonical(f *testing.F) {
	for _, in := range corpus() {
		f.Add(in)
	}

	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Canonical(in)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Canonical(%q) returned %T, want *Error", in, err)
			}
			return
		}
		// Everything accepted is valid JSON by encoding/json's (laxer)
		// rules, and so is the canonical form.
		if !json.Valid(in) {
			t.Fatalf("Canonical accepted %q, which encoding/json rejects", in)
		}
		if !json.Valid(out) {
			t.Fatalf("Canonical(%q) = %q, not valid JSON", in, out)
		}
		again, err := Canonical(out)
		if err != nil {
			t.Fatalf("Canonical(%q) = %q, which is rejected: %v", in, out, err)
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q -> %q -> %q", in, out, again)
		}
	})
}

// bookingPayload is a typical tool-call body of about 300 bytes.
const bookingPayload = `{
  "tool": "book_appointment",
  "arguments": {
    "slot_id": "slot_2024-06-14T10:30:00Z_dr-lópez",
    "patient": {"name": "Zoë Ångström", "phone": "+44 20 7946 0958", "dob": "1987-03-21"},
    "reason": "Follow-up\nbring results",
    "duration_minutes": 30,
    "deposit": 25.00,
    "reminders": [1440, 60],
    "new_patient": false,
    "notes": null
  }
}`

func BenchmarkCanonical(b *testing.B) {
	in := []byte(bookingPayload)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Canonical(in); err != nil {
			b.Fatal(err)
		}
	}
}

func mustCanonical(t *testing.T, in string) []byte {
	t.Helper()
	out, err := Canonical([]byte(in))
	if err != nil {
		t.Fatalf("Canonical(%q): %v", in, err)
	}
	return out
}

func assertRejected(t *testing.T, in []byte, reason string) *Error {
	t.Helper()
	out, err := Canonical(in)
	if err == nil {
		t.Fatalf("Canonical(%.60q) = %.60q, want error", in, out)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Canonical(%.60q) error %T %v, want *Error", in, err, err)
	}
	if !strings.Contains(e.Reason, reason) {
		t.Errorf("Canonical(%.60q) reason %q, want it to contain %q", in, e.Reason, reason)
	}
	return e
}
