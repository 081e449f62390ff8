package providersim_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
)

// A capture that adds metadata never changes a PaymentIntent the ledger
// already handed out: the ledger's route encodes its copies while
// captures go on (go test -race sees it).
func TestStripeCaptureLeavesLedgerCopiesAlone(t *testing.T) {
	sim := simtest.Start(t, providersim.Config{})
	post := func(path string, form url.Values) map[string]any {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, sim.URL+path, strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer sk_test_sim")
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res, err := client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d %v %v", path, res.StatusCode, body, err)
		}
		return body
	}
	const holds = 20
	ids := make([]string, holds)
	for i := range ids {
		pi := post("/v1/payment_intents", url.Values{"amount": {"4500"}, "currency": {"eur"}, "capture_method": {"manual"},
			"confirm": {"true"}, "payment_method": {"pm_card_visa"}, "metadata[oncecall_action]": {"a"}})
		ids[i] = pi["id"].(string)
	}
	ctx, stop := context.WithCancel(t.Context())
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for ctx.Err() == nil {
				if res, err := client().Get(sim.URL + "/stripe/ledger"); err == nil {
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
			}
		})
	}
	for _, id := range ids {
		pi := post("/v1/payment_intents/"+id+"/capture", url.Values{"metadata[oncecall_charge_action]": {"c"}})
		if md, _ := pi["metadata"].(map[string]any); md["oncecall_charge_action"] != "c" || md["oncecall_action"] != "a" {
			t.Fatalf("captured metadata: %v", pi["metadata"])
		}
	}
	stop()
	readers.Wait()
	for _, pi := range sim.StripeLedger() {
		if pi.Captures != 1 || pi.Metadata["oncecall_charge_action"] != "c" {
			t.Fatalf("ledger: %s captured %d times, metadata %v", pi.ID, pi.Captures, pi.Metadata)
		}
	}
}
