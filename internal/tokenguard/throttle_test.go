package tokenguard_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/tokenguard"
)

// Five wrong passwords of one account, from any addresses, and that
// account waits a minute; other accounts are not held up, and a right
// password spends nothing. Ten wrong ones from one address, across
// accounts, and that address waits.
func TestThrottleSlowsAnAccountAndAnAddress(t *testing.T) {
	t.Parallel()
	c := &clock{now: time.Unix(1_800_000_000, 0)}
	th := tokenguard.NewThrottle(tokenguard.ThrottleConfig{Now: c.Now})
	for i := range 5 {
		if _, wait := th.Try("192.0.2."+strconv.Itoa(i+1)+":4000", "ana@example.com"); wait != 0 {
			t.Fatalf("wrong attempt %d at the account: wait %v", i+1, wait)
		}
	}
	if _, wait := th.Try("192.0.2.9:4000", "ana@example.com"); wait <= 0 || wait > time.Minute {
		t.Fatalf("a sixth attempt at the account: wait %v, want up to a minute", wait)
	}
	for range 20 {
		a, wait := th.Try("198.51.100.1:4000", "bo@example.com")
		if wait != 0 {
			t.Fatalf("right attempts at another account: wait %v", wait)
		}
		a.Right()
	}
	for i := range 10 {
		if _, wait := th.Try("203.0.113.7:4000", "guess"+strconv.Itoa(i)+"@example.com"); wait != 0 {
			t.Fatalf("wrong attempt %d from one address: wait %v", i+1, wait)
		}
	}
	if _, wait := th.Try("203.0.113.7:5000", "cy@example.com"); wait <= 0 || wait > 6*time.Second {
		t.Fatalf("an eleventh attempt from the address: wait %v, want up to 6s", wait)
	}
	c.now = c.now.Add(time.Minute)
	if _, wait := th.Try("192.0.2.9:4000", "ana@example.com"); wait != 0 {
		t.Fatalf("a minute later the account may try again: wait %v", wait)
	}
}
