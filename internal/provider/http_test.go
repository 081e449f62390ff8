package provider_test

import (
	"errors"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
)

// A write the provider decides later is ErrWaiting for the step driver,
// from the write and from both lookups, until it is decided; then the
// lookups find it committed, with what it gave back.
func TestAPendingWriteIsWaitingUntilDecided(t *testing.T) {
	t.Parallel()
	for _, honours := range []bool{true, false} {
		sim := simtest.Start(t, providersim.Config{NoIdempotency: !honours})
		p := provider.NewHTTP(provider.HTTPConfig{BaseURL: sim.URL, Traits: provider.Traits{HonoursKeys: honours, KeyRetention: time.Hour, AuthoritativeLookup: true}})
		key, ref := "k-pending-"+map[bool]string{true: "keys", false: "nokeys"}[honours], "a/"+map[bool]string{true: "keys", false: "nokeys"}[honours]
		payload := []byte(`{"version":2,"tenant_id":"t","action_id":"a","start":{"utc":"2031-03-04T09:00:00Z","local":"2031-03-04T09:00:00","zone":"UTC"},` +
			`"end":{"utc":"2031-03-04T09:30:00Z","local":"2031-03-04T09:30:00","zone":"UTC"},"practitioner":{"id":"p","name":"Ana","calendar_id":"ana-` + key + `"},` +
			`"service":{"name":"Cleaning"},"customer":{"id":"c","name":"Lucía"}}`)
		sim.Fault("calendar", "pending=300ms", 1)
		w := provider.Write{Capability: provider.Calendar, Key: key, ExternalRef: ref, Operation: "appointment.book", Payload: payload}
		if _, err := p.Write(t.Context(), w); !errors.Is(err, provider.ErrWaiting) || provider.Classify(err) != "waiting" {
			t.Fatalf("honours keys %v: write of a pending booking: %v, want ErrWaiting", honours, err)
		}
		lookup := func() (provider.Record, bool, error) {
			if honours {
				return p.LookupByKey(t.Context(), provider.Calendar, key)
			}
			recs, err := p.LookupByRef(t.Context(), provider.Calendar, ref)
			if err != nil || len(recs) == 0 {
				return provider.Record{}, false, err
			}
			return recs[0], true, nil
		}
		if _, _, err := lookup(); !errors.Is(err, provider.ErrWaiting) {
			t.Fatalf("honours keys %v: lookup before the decision: %v, want ErrWaiting", honours, err)
		}
		end := time.Now().Add(5 * time.Second)
		for {
			rec, found, err := lookup()
			if err == nil && found {
				if rec.Status != "committed" || rec.Data["event_id"] != rec.ID {
					t.Fatalf("honours keys %v: decided write %+v", honours, rec)
				}
				break
			}
			if !errors.Is(err, provider.ErrWaiting) || time.Now().After(end) {
				t.Fatalf("honours keys %v: lookup: %+v %v %v; want it decided within 5s", honours, rec, found, err)
			}
			<-time.After(50 * time.Millisecond) // poll interval of a condition wait
		}
	}
}
