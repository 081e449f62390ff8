package calsimtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/oncecall/oncecall/internal/sim/calcom"
	"github.com/oncecall/oncecall/internal/sim/googlecal"
	"github.com/oncecall/oncecall/internal/sim/msgraph"
)

// Event is an event (a Cal.com booking) a fake holds, as audits count it:
// the action whose mark it carries (empty for one a person made), its time
// and whether it is live (not deleted or cancelled).
type Event struct {
	ID, Calendar string
	Action       string
	Start, End   time.Time
	Live, Direct bool
}

// Events reads the ledger of the fake of provider ("google", "microsoft",
// "calcom") at base: every event it ever held, in the order made. It never
// lags.
func Events(ctx context.Context, provider, base string) ([]Event, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/sim/ledger", nil)
	if err != nil {
		return nil, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read the %s ledger: %w", provider, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("read the %s ledger: %d %v", provider, res.StatusCode, err)
	}
	var out []Event
	switch provider {
	case "google":
		var l googlecal.Ledger
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, err
		}
		for _, e := range l.Events {
			var action string
			if e.Event.ExtendedProperties != nil {
				action = e.Event.ExtendedProperties.Private["oncecall_action"]
			}
			out = append(out, Event{ID: e.Event.ID, Calendar: e.Calendar, Action: action, Start: e.Start, End: e.End,
				Live: e.Event.Status != "cancelled", Direct: e.Direct})
		}
	case "microsoft":
		var l msgraph.Ledger
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, err
		}
		for _, e := range l.Events {
			var action string
			for _, p := range e.Event.SingleValueExtendedProperties {
				if strings.HasSuffix(p.ID, " Name oncecall_action") {
					action = p.Value
				}
			}
			out = append(out, Event{ID: e.Event.ID, Calendar: e.User, Action: action, Start: e.Start, End: e.End,
				Live: !e.Deleted && !e.Event.IsCancelled, Direct: e.Direct})
		}
	case "calcom":
		var l calcom.Ledger
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, err
		}
		for _, b := range l.Bookings {
			out = append(out, Event{ID: b.Booking.UID, Calendar: fmt.Sprint(b.Booking.EventTypeID), Action: b.Booking.Metadata["oncecall_action"],
				Start: b.Start, End: b.End, Live: b.Booking.Status != "cancelled", Direct: b.Direct})
		}
	default:
		return nil, fmt.Errorf("no calendar fake %q", provider)
	}
	return out, nil
}

// LiveOf returns the live events among evs that carry action's mark.
func LiveOf(evs []Event, action string) []Event {
	var out []Event
	for _, e := range evs {
		if e.Live && e.Action == action {
			out = append(out, e)
		}
	}
	return out
}
