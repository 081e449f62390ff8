package tokenguard_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/tokenguard"
)

const secret = "operator-token-0123456789abcdef-0123"

// clock is a test clock that moves only when told.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func setup() (*tokenguard.Guard, *clock) {
	c := &clock{now: time.Unix(1_800_000_000, 0)}
	return tokenguard.New(secret, tokenguard.Config{Now: c.Now}), c
}

// Ten wrong attempts from one address, then it waits whatever it sends,
// until its bucket gives it one more; another address is not held up, and
// right attempts spend nothing.
func TestAnAddressWaitsAfterTenWrongAttempts(t *testing.T) {
	t.Parallel()
	g, c := setup()
	for i := range 10 {
		if right, wait := g.Check("192.0.2.1:4000", "guess"); right || wait != 0 {
			t.Fatalf("wrong attempt %d: right %v, wait %v", i+1, right, wait)
		}
	}
	if right, wait := g.Check("192.0.2.1:4001", secret); right || wait <= 0 || wait > 6*time.Second {
		t.Fatalf("the right secret from the throttled address: right %v, wait %v, want a wait of up to 6s", right, wait)
	}
	for range 50 {
		if right, wait := g.Check("192.0.2.2:4000", secret); !right || wait != 0 {
			t.Fatalf("the right secret from another address: right %v, wait %v", right, wait)
		}
	}
	if _, wait := g.Check("192.0.2.2:4000", "guess"); wait != 0 {
		t.Fatalf("right attempts spent the address's allowance: wait %v", wait)
	}
	c.now = c.now.Add(6 * time.Second)
	if right, wait := g.Check("192.0.2.1:4000", secret); !right || wait != 0 {
		t.Fatalf("6s later: right %v, wait %v", right, wait)
	}
}

// Many addresses, each within its allowance, meet the overall one.
func TestEveryAddressTogetherWaitsAfterAHundredWrongAttempts(t *testing.T) {
	t.Parallel()
	g, _ := setup()
	for a := range 20 {
		for range 5 {
			if _, wait := g.Check("198.51.100."+strconv.Itoa(a)+":1", "guess"); wait != 0 {
				t.Fatalf("wait %v before 100 wrong attempts", wait)
			}
		}
	}
	if _, wait := g.Check("203.0.113.9:1", secret); wait <= 0 || wait > time.Second {
		t.Fatalf("a fresh address after 100 wrong attempts overall: wait %v, want up to 1s", wait)
	}
}

// The addresses of one IPv6 /64 are one client; an IPv4 address mapped in
// IPv6 is that IPv4 address.
func TestClientsAreIPv4AddressesAndIPv6Networks(t *testing.T) {
	t.Parallel()
	g, _ := setup()
	for i := range 10 {
		g.Check("[2001:db8:1:2::"+strconv.Itoa(i+1)+"]:443", "guess")
	}
	if _, wait := g.Check("[2001:db8:1:2:ffff::1]:443", "guess"); wait == 0 {
		t.Fatal("another address of the same /64 was not held up")
	}
	if _, wait := g.Check("[2001:db8:1:3::1]:443", "guess"); wait != 0 {
		t.Fatalf("another /64 was held up: %v", wait)
	}
	for range 10 {
		g.Check("192.0.2.7:1", "guess")
	}
	if _, wait := g.Check("[::ffff:192.0.2.7]:1", "guess"); wait == 0 {
		t.Fatal("the IPv4-mapped form of a throttled address was not held up")
	}
}
