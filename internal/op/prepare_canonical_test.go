package op_test

import (
	"testing"

	"github.com/oncecall/oncecall/internal/booking"
	"github.com/oncecall/oncecall/internal/canon"
	"github.com/oncecall/oncecall/internal/fault"
)

// PrepareCanonical of a canonical body is what Prepare makes of it: the
// same input and fingerprint, and the same errors for bad input.
func TestPrepareCanonicalIsPrepare(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"slot_id":"0197a3b0-0000-7000-8000-000000000002","customer_id":"0197A3B0-0000-7000-8000-000000000001",` +
			`"service":" Zoe\u0308 <cut> & \"trim\" ","notify":"sms"}`,
		`{"customer_id":"0197a3b0-0000-7000-8000-000000000001","slot_id":"0197a3b0-0000-7000-8000-000000000002","Notify":"sms"}`,
		`{"customer_id":"0197a3b0-0000-7000-8000-000000000001","slot_id":"0197a3b0-0000-7000-8000-000000000002","extra":1}`,
		`{"customer_id":7,"slot_id":"0197a3b0-0000-7000-8000-000000000002"}`,
		`{"customer_id":"nope","slot_id":"0197a3b0-0000-7000-8000-000000000002"}`,
		`[1]`,
	} {
		c, err := canon.Canonical([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		want, wantErr := booking.Book.Prepare([]byte(body), nil)
		got, err := booking.Book.PrepareCanonical(c)
		switch {
		case wantErr != nil || err != nil:
			if fault.As(err).Code != fault.As(wantErr).Code || fault.As(err).Field != fault.As(wantErr).Field || fault.As(err).Message != fault.As(wantErr).Message {
				t.Errorf("PrepareCanonical(%s) = %v, Prepare: %v", c, err, wantErr)
			}
		case string(got.Input) != string(want.Input) || got.Fingerprint != want.Fingerprint:
			t.Errorf("PrepareCanonical(%s) = %s %s, Prepare: %s %s", c, got.Input, got.Fingerprint, want.Input, want.Fingerprint)
		}
	}
}
