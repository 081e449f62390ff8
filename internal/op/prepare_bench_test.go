package op_test

import (
	"testing"

	"github.com/oncecall/oncecall/internal/booking"
)

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
