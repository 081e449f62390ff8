package console

import (
	"strings"
	"testing"
	"time"
)

// TestSessionCookie: a session is accepted until it expires, and only with
// the signature of the same operator token.
func TestSessionCookie(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := &Console{key: sessionKey("token-a")}
	v := c.encode(session{Name: "Ana <ops>", Expires: now.Add(time.Hour)})
	if s, ok := c.decode(v, now); !ok || s.Name != "Ana <ops>" {
		t.Fatalf("fresh session: %+v %v", s, ok)
	}
	if _, ok := c.decode(v, now.Add(time.Hour)); ok {
		t.Fatal("an expired session was accepted")
	}
	other := &Console{key: sessionKey("token-b")}
	if _, ok := other.decode(v, now); ok {
		t.Fatal("a session signed with another token was accepted")
	}
	name, rest, _ := strings.Cut(v, ".")
	if _, ok := c.decode("Qm9i."+rest, now); ok || name == "Qm9i" {
		t.Fatal("a session with another name under the same signature was accepted")
	}
	exp, mac, _ := strings.Cut(rest, ".")
	if _, ok := c.decode(name+".9999999999."+mac, now); ok || exp == "9999999999" {
		t.Fatal("a session with a longer expiry under the same signature was accepted")
	}
	for _, bad := range []string{"", ".", "a.b", "a.b.c.d"} {
		if _, ok := c.decode(bad, now); ok {
			t.Fatalf("%q was accepted", bad)
		}
	}
}
