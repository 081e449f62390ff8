package op_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/oncecall/oncecall/internal/canon"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/op"
)

// fieldOf returns the field an error names, or "" when err is nil.
func fieldOf(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var fe *fault.Error
	if !errors.As(err, &fe) || fe.Code != fault.InvalidInput {
		t.Fatalf("error %v is not INVALID_INPUT", err)
	}
	return fe.Field
}

func TestPhone(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"+442079460958", "+442079460958"},
		{" +44 20 7946 0958 ", "+442079460958"},
		{"0044 (20) 7946-0958", "+442079460958"},
		{"+1.415.555.0100", "+14155550100"},
		{"+44 (0)20 7946 0958", "+442079460958"}, // the trunk prefix is not part of it
		{"+3612345678", "+3612345678"},
		{"+12345678", ""},        // 7 digits: no number of the North American plan
		{"+123456789012345", ""}, // 14 digits: neither
		{"+9991234567", ""},      // no country has 999
		{"", ""},
		{"02079460958", ""},            // national form: no country code
		{"+0442079460958", ""},         // country codes never start with 0
		{"+1234567", ""},               // too short
		{"+1234567890123456", ""},      // too long
		{"+44 20 7946 0958 ext 2", ""}, // letters
		{"44+2079460958", ""},          // + not first
		{"++442079460958", ""},
		{"+", ""},
	}
	for _, c := range cases {
		v := c.in
		err := op.Phone("phone", &v)
		switch {
		case c.want == "" && fieldOf(t, err) != "phone":
			t.Errorf("Phone(%q) = %q, want an error naming phone", c.in, v)
		case c.want != "" && (err != nil || v != c.want):
			t.Errorf("Phone(%q) = %q, %v; want %q", c.in, v, err, c.want)
		}
	}
}

// FuzzPhonePattern checks that the schema pattern of phone fields accepts
// what Phone accepts (for values without surrounding whitespace, which
// Phone forgives and the pattern does not), and that of what the pattern
// matches Phone refuses only numbers of no country, saying so.
func FuzzPhonePattern(f *testing.F) {
	for _, s := range []string{
		"+442079460958", "+44 20 7946 0958", "0044 (20) 7946-0958", "(00)44 20 7946 0958", "+1.415.555.0100",
		"+12345678", "+123456789012345", "02079460958", "+0442079460958", "+1234567", "+1234567890123456",
		"0 0 1 2 3 4 5 6 7 8", "000442079460958", "+44 20 7946 0958 ext 2", "44+2079460958", "++442079460958", "+",
		"+(44) 20-7946-0958", "+44\t2079460958", "+44 20 7946 0958 0000 0000 0000 00",
	} {
		f.Add(s)
	}
	re := regexp.MustCompile(op.PhonePattern)
	f.Fuzz(func(t *testing.T, s string) {
		if s != strings.TrimSpace(s) {
			return
		}
		v := s
		err := op.Phone("phone", &v)
		matched := re.MatchString(s) && utf8.RuneCountInString(s) <= op.MaxPhoneLen
		switch {
		case err == nil && !matched:
			t.Fatalf("%q: Phone accepts what the pattern (with maxLength) refuses", s)
		case err != nil && matched && !strings.Contains(err.Error(), "of any country"):
			// Of what the pattern matches, Phone refuses only what
			// libphonenumber says no country has, and says so.
			t.Fatalf("%q: the pattern matches, Phone refuses it with %v", s, err)
		}
	})
}

func TestEmail(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"ana@example.com", "ana@example.com"},
		{"  Ana.Lopez@Example.COM ", "ana.lopez@example.com"},
		{"a+tag@mail.example.org", "a+tag@mail.example.org"},
		{"", ""},
		{"ana", ""},
		{"ana@localhost", ""},
		{"Ana <ana@example.com>", ""},
		{"ana@example.com, bob@example.com", ""},
		{"ana@@example.com", ""},
		{strings.Repeat("a", 250) + "@example.com", ""},
	}
	for _, c := range cases {
		v := c.in
		err := op.Email("to", &v)
		switch {
		case c.want == "" && fieldOf(t, err) != "to":
			t.Errorf("Email(%q) = %q, want an error naming to", c.in, v)
		case c.want != "" && (err != nil || v != c.want):
			t.Errorf("Email(%q) = %q, %v; want %q", c.in, v, err, c.want)
		}
	}
}

func TestCurrency(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"EUR": "EUR", "usd": "USD", " jpy ": "JPY", "XCG": "XCG",
		"": "", "EU": "", "EURO": "", "ABC": "", "XAU": "", "XXX": "", "HRK": "", "D A": "", "€": "",
	} {
		v := in
		err := op.Currency("currency", &v)
		switch {
		case want == "" && fieldOf(t, err) != "currency":
			t.Errorf("Currency(%q) = %q, want an error", in, v)
		case want != "" && (err != nil || v != want):
			t.Errorf("Currency(%q) = %q, %v; want %q", in, v, err, want)
		}
	}
}

type amountInput struct {
	Amount op.Integer `json:"amount,omitzero"`
}

func TestAmountDecodesStrictly(t *testing.T) {
	t.Parallel()
	cases := []struct {
		body string
		want int64 // 0: an error naming amount
	}{
		{`{"amount":1}`, 1},
		{`{"amount":1500}`, 1500},
		{`{"amount":15e2}`, 1500},
		{`{"amount":1.0}`, 1},
		{`{"amount":9007199254740991}`, 1<<53 - 1},
		{`{"amount":9007199254740992}`, 0},
		{`{"amount":99999999999999999999999}`, 0},
		{`{"amount":0}`, 0},
		{`{"amount":-5}`, 0},
		{`{"amount":-99999999999999999999999}`, 0},
		{`{"amount":1.5}`, 0},
		{`{"amount":1e-2}`, 0},
		{`{"amount":"100"}`, 0},
		{`{"amount":true}`, 0},
		{`{"amount":[1]}`, 0},
		{`{"amount":{"value":1}}`, 0},
		{`{"amount":null}`, 0},
		{`{}`, 0},
	}
	for _, c := range cases {
		var in amountInput
		err := op.Decode([]byte(c.body), &in)
		if err == nil {
			err = op.Amount("amount", &in.Amount, true)
		}
		switch {
		case c.want == 0 && fieldOf(t, err) != "amount":
			t.Errorf("%s: got %q, %v; want an error naming amount", c.body, in.Amount, err)
		case c.want != 0 && (err != nil || in.Amount.Int64() != c.want):
			t.Errorf("%s: got %q, %v; want %d", c.body, in.Amount, err, c.want)
		}
	}
	// An absent optional amount is fine and stays absent in the canonical input.
	var in amountInput
	if err := op.Decode([]byte(`{}`), &in); err != nil || op.Amount("amount", &in.Amount, false) != nil {
		t.Fatalf("absent optional amount rejected")
	}
	if b, _ := canon.Marshal(in); string(b) != `{}` {
		t.Fatalf("absent amount encodes as %s", b)
	}
}

type patchInput struct {
	Phone op.Patch `json:"phone,omitzero"`
}

func TestPatchTellsAbsentFromNull(t *testing.T) {
	t.Parallel()
	cases := []struct{ body, want, identity string }{
		{`{}`, `{}`, ""},
		{`{"phone":null}`, `{"phone":null}`, "phone=null"},
		{`{"phone":"null"}`, `{"phone":"null"}`, `phone="null"`},
		{`{"phone":""}`, `{"phone":""}`, `phone=""`},
	}
	for _, c := range cases {
		var in patchInput
		if err := op.Decode([]byte(c.body), &in); err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		got, err := canon.Marshal(in)
		if err != nil || string(got) != c.want || in.Phone.Identity("phone") != c.identity {
			t.Errorf("%s: encodes as %s (%v), identity %q", c.body, got, err, in.Phone.Identity("phone"))
		}
	}
	var in patchInput
	if err := op.Decode([]byte(`{"phone":5}`), &in); fieldOf(t, err) != "phone" {
		t.Fatalf("a number for a patch field: %v", err)
	}
}
