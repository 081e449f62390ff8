package callback

import (
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/internal/schedule"
)

// View is a callback as answers and GET /v1/callbacks write it: its window
// in UTC and on the business's wall clock, and said as a caller says it.
type View struct {
	ID          string `json:"id"`
	CustomerID  string `json:"customer_id,omitempty"`
	Phone       string `json:"phone,omitempty"`
	Reason      string `json:"reason"`
	CallbackRef string `json:"callback_ref,omitempty"`
	Status      string `json:"status"`
	// Timezone is the zone the window was given in.
	Timezone       string    `json:"timezone"`
	WindowStartsAt time.Time `json:"window_starts_at"`
	WindowEndsAt   time.Time `json:"window_ends_at"`
	// WindowStartLocal and WindowEndLocal are RFC 3339 times with the
	// zone's offset, e.g. 2030-07-05T14:00:00+01:00.
	WindowStartLocal string `json:"window_start_local"`
	WindowEndLocal   string `json:"window_end_local"`
	// When is the window as a person says it, e.g. "Friday 5 July between
	// 14:00 and 16:00".
	When        string     `json:"when"`
	CreatedAt   time.Time  `json:"created_at"`
	CancelledAt *time.Time `json:"cancelled_at,omitempty"`
}

// ViewOf writes c, said in the tenant's locale; now decides whether When
// names the year.
func ViewOf(c oncecall.Callback, locale schedule.Locale, now time.Time) View {
	clock, _ := schedule.NewClock(c.Timezone, string(locale))
	loc := clock.Loc
	v := View{
		ID: c.ID.String(), Phone: c.Phone, Reason: c.Reason, CallbackRef: c.CallbackRef, Status: string(c.Status),
		Timezone: c.Timezone, WindowStartsAt: c.WindowStart.UTC(), WindowEndsAt: c.WindowEnd.UTC(),
		WindowStartLocal: c.WindowStart.In(loc).Format(time.RFC3339), WindowEndLocal: c.WindowEnd.In(loc).Format(time.RFC3339),
		When: clock.Window(c.WindowStart, c.WindowEnd, now), CreatedAt: c.CreatedAt.UTC(),
	}
	if c.CustomerID != uuid.Nil {
		v.CustomerID = c.CustomerID.String()
	}
	if !c.CancelledAt.IsZero() {
		at := c.CancelledAt.UTC()
		v.CancelledAt = &at
	}
	return v
}

// Views writes a list of callbacks.
func Views(list []oncecall.Callback, locale schedule.Locale, now time.Time) []View {
	out := make([]View, len(list))
	for i, c := range list {
		out[i] = ViewOf(c, locale, now)
	}
	return out
}
