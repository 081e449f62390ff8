package idem_test

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/idem"
)

// FuzzValidateKey checks ValidateKey against the rule it implements (1 to
// 255 bytes of printable ASCII), and that the hashes made from keys are
// well-formed.
func FuzzValidateKey(f *testing.F) {
	for _, k := range []string{
		"k", "book-42-731", "", " ", "\x00", "a\x7f", "\t", "ключ", "k\xffey",
		strings.Repeat("a", idem.MaxKeyLen), strings.Repeat("a", idem.MaxKeyLen+1),
		"derived:" + strings.Repeat("0", 64),
	} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		want := len(key) >= 1 && len(key) <= idem.MaxKeyLen
		for i := 0; i < len(key); i++ {
			want = want && key[i] >= 0x20 && key[i] <= 0x7e
		}
		err := idem.ValidateKey(key)
		if (err == nil) != want {
			t.Fatalf("ValidateKey(%q) = %v, want accepted=%v", key, err, want)
		}
		if err != nil {
			if code := fault.CodeOf(err); code != fault.KeyInvalid {
				t.Fatalf("ValidateKey(%q) code %s, want %s", key, code, fault.KeyInvalid)
			}
			if strings.Contains(err.Error(), key) && len(key) > 3 {
				t.Fatalf("the error repeats the key: %v", err)
			}
		}
		if h := idem.KeyHash(key); len(h) != 12 || !isHex(h) || h != idem.KeyHash(key) {
			t.Fatalf("KeyHash(%q) = %q", key, h)
		}
		// A derived key is always a valid key, whatever it is derived from.
		if d := idem.DeriveKey("tenant", key); idem.ValidateKey(d) != nil {
			t.Fatalf("DeriveKey(%q) = %q is not a valid key", key, d)
		}
	})
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

func TestDeriveKeyPartsCannotCollide(t *testing.T) {
	t.Parallel()
	pairs := [][2][]string{
		{{"a\x00", "b"}, {"a", "\x00b"}},
		{{"ab", "c"}, {"a", "bc"}},
		{{"a", ""}, {"a"}},
	}
	for _, p := range pairs {
		if idem.DeriveKey(p[0]...) == idem.DeriveKey(p[1]...) {
			t.Errorf("DeriveKey(%q) == DeriveKey(%q)", p[0], p[1])
		}
	}
	if idem.DeriveKey("x", "y") != idem.DeriveKey("x", "y") {
		t.Error("DeriveKey is not deterministic")
	}
}
