package op_test

import (
	"testing"

	"github.com/oncecall/oncecall/internal/booking"
)

// Fingerprints are stored with every action: a request must keep the
// fingerprint it had when its action was stored, or its retries would be
// refused as a reused key. These were computed before canon.Encoder existed.
func TestPrepareKeepsFingerprints(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ body, input, fingerprint string }{
		{
			`{"customer_id":"0197A3B0-0000-7000-8000-000000000001","slot_id":"0197a3b0-0000-7000-8000-000000000002"}`,
			`{"customer_id":"0197a3b0-0000-7000-8000-000000000001","notify":"","service":"","slot_id":"0197a3b0-0000-7000-8000-000000000002"}`,
			"bcac8a695f386bdbe90a05ae0ff89eea4b74e17aa2a36dce8be5952f06bd3b7d",
		},
		{
			`{"slot_id":"0197a3b0-0000-7000-8000-000000000002","customer_id":"0197a3b0-0000-7000-8000-000000000001",` +
				`"service":" Zoe\u0308 <cut> & \"trim\" ","notify":"sms"}`,
			`{"customer_id":"0197a3b0-0000-7000-8000-000000000001","notify":"sms","service":"Zoë <cut> & \"trim\"","slot_id":"0197a3b0-0000-7000-8000-000000000002"}`,
			"5a52449cecd2a239f6b5557ecac578aaa6e35b913e1aa9c1b6143ba0a386b772",
		},
	} {
		p, err := booking.Book.Prepare([]byte(c.body), nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(p.Input) != c.input || p.Fingerprint != c.fingerprint {
			t.Errorf("Prepare(%s) = %s %s, want %s %s", c.body, p.Input, p.Fingerprint, c.input, c.fingerprint)
		}
	}
}

// BenchmarkPrepare is the work every write does before the idempotency core
// sees it, a replay included: strict decoding, normalisation, the canonical
// input and its fingerprint.
func BenchmarkPrepare(b *testing.B) {
	body := []byte(`{"customer_id":"0197a3b0-0000-7000-8000-000000000001","slot_id":"0197a3b0-0000-7000-8000-000000000002"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := booking.Book.Prepare(body, nil); err != nil {
			b.Fatal(err)
		}
	}
}
