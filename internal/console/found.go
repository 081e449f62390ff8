package console

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/internal/provider/calendar"
	"github.com/oncecall/oncecall/internal/schedule"
)

// CalendarEvents reads a business's own calendar (Google Calendar,
// Microsoft 365, Cal.com) through its adapter: the events a calendar holds
// in a window (internal/provider/calendars implements it).
type CalendarEvents interface {
	Events(ctx context.Context, tenant uuid.UUID, calendarID, customer string, from, to time.Time) ([]calendar.Event, error)
}

// foundEvent is an event the calendar holds at the time a stuck booking
// was for: what the resolve form offers as the provider's reference.
type foundEvent struct {
	ID, Title, When string
	// Ours says oncecall wrote it for this action.
	Ours bool
}

// foundEvents lists the events the business's calendar holds at the time
// of each open calendar step of a, as its adapter's lookup finds them now;
// a calendar that cannot be read now offers none (the form still takes a
// typed reference).
func (c *Console) foundEvents(r *http.Request, a oncecall.Action, steps []oncecall.Step, clock schedule.Clock) []foundEvent {
	if c.cfg.Calendars == nil {
		return nil
	}
	var out []foundEvent
	for _, s := range steps {
		if s.State != oncecall.StepUnknown && s.State != oncecall.StepPending || !calendarKinds[s.ProviderKind] {
			continue
		}
		var p calendar.Payload
		if json.Unmarshal(s.Payload, &p) != nil || p.Start.UTC.IsZero() || p.Practitioner.CalendarID == "" {
			continue
		}
		evs, err := c.cfg.Calendars.Events(r.Context(), a.TenantID, p.Practitioner.CalendarID, "", p.Start.UTC, p.End.UTC)
		if err != nil {
			c.cfg.Log.Warn().Err(err).Str("action_id", a.ID.String()).Msg("console: the calendar could not be read for the resolve form")
			continue
		}
		at := clock.In(p.Start.Zone)
		for _, ev := range evs {
			if ev.Status == calendar.Cancelled || !ev.Start.Before(p.End.UTC) || !ev.End.After(p.Start.UTC) {
				continue
			}
			out = append(out, foundEvent{ID: ev.ID, Title: ev.Title, When: at.Spoken(ev.Start, c.now()) + " (" + at.Zone + ")",
				Ours: ev.Marks.Action == a.ID.String()})
		}
	}
	return out
}

// calendarKinds are the providers that are a business's own calendar.
var calendarKinds = map[string]bool{"google": true, "microsoft": true, "calcom": true}
