package console

import (
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/schedule"
)

// heardRow is an answer a caller was given, as the action's page lists it.
type heardRow struct {
	oncecall.Heard
	Clock schedule.Clock
	From  string // the platform, as people know it
}

// truth is what callers heard of an action beside what is true now: the
// last answer given, what stands now, and whether someone should call
// them because the two differ.
type truth struct {
	Heard []heardRow
	// Told is the last answer in a few words ("confirmed", "not
	// confirmed yet"), Now what stands now ("moved by the clinic to
	// Friday 11:00 in Google Calendar").
	Told, Now string
	// CallThem says why the caller should be called, when what they
	// were told is not what is true now.
	CallThem string
}

// outcomeWords say an outcome as the caller heard it.
var outcomeWords = map[string]string{
	string(oncecall.Confirmed): "confirmed", string(oncecall.Rejected): "not done (rejected)",
	string(oncecall.Pending): "not confirmed yet",
}

// heardOf is what the callers of an action heard, in order, beside what
// is true now.
func (c *Console) heardOf(r *http.Request, a oncecall.Action, t tenantInfo, in map[string]string) (truth, error) {
	list, err := c.cfg.Store.Heard(r.Context(), a.TenantID, a.ID)
	if err != nil {
		return truth{}, err
	}
	var out truth
	for _, h := range list {
		out.Heard = append(out.Heard, heardRow{Heard: h, Clock: t.Clock, From: cmpOr(platformNames[h.Platform], h.Platform)})
	}
	out.Now, err = c.nowWords(r, a, t, in)
	if err != nil || len(list) == 0 {
		return out, err
	}
	last := list[len(list)-1]
	out.Told = cmpOr(outcomeWords[last.Outcome], last.Outcome)
	if last.Current != "" {
		out.Told += " (then " + last.Current + ")"
	}
	switch now := a.Outcome; {
	case a.State != oncecall.Completed:
	case last.Outcome == string(oncecall.Pending):
		out.CallThem = "They were told it was not confirmed yet; it is " + outcomeWords[string(now)] + " now: tell them."
	case last.Outcome == string(oncecall.Confirmed) && out.Now != "" && out.Now != outcomeWords[string(now)]:
		out.CallThem = "They were told it was confirmed; since then it was " + out.Now + ": call them."
	}
	return out, nil
}

// nowWords say what stands now: the action's outcome and, for a booking,
// where its appointment is now (oncecall's own record, or the calendar's
// as oncecall last read it), which may differ from what was said.
func (c *Console) nowWords(r *http.Request, a oncecall.Action, t tenantInfo, in map[string]string) (string, error) {
	switch {
	case a.State != oncecall.Completed:
		return "not known yet", nil
	case a.Outcome != oncecall.Confirmed || (a.Operation != "appointment.book" && a.Operation != "appointment.reschedule"):
		return cmpOr(outcomeWords[string(a.Outcome)], string(a.Outcome)), nil
	}
	id := parseID(a.ResourceID)
	if a.Operation == "appointment.reschedule" {
		id = parseID(in["appointment_id"])
	}
	if id == uuid.Nil {
		return "confirmed", nil
	}
	ctx, now := r.Context(), c.now()
	booked := time.Time{}
	if sl := parseID(in["slot_id"]); sl != uuid.Nil {
		if p, err := c.cfg.Store.SlotPlace(ctx, a.TenantID, sl); err == nil {
			booked = p.StartsAt
		} else if !errors.Is(err, db.ErrNotFound) {
			return "", err
		}
	}
	said := func(at time.Time) string { return t.Clock.Spoken(at, now) + " (" + t.Clock.Zone + ")" }
	if ap, err := c.cfg.Store.AppointmentByID(ctx, a.TenantID, id); err == nil {
		switch {
		case ap.Status != "active":
			return "cancelled", nil
		case !booked.IsZero() && !ap.StartsAt.Equal(booked):
			return "moved to " + said(ap.StartsAt), nil
		}
		return "confirmed", nil
	} else if !errors.Is(err, db.ErrNotFound) {
		return "", err
	}
	ca, err := c.cfg.Store.CalendarAppointment(ctx, a.TenantID, id)
	if errors.Is(err, db.ErrNotFound) {
		return "confirmed", nil
	}
	if err != nil {
		return "", err
	}
	where := cmpOr(providerNames[ca.Provider], "the calendar")
	switch {
	case ca.Status == oncecall.CalendarCancelled:
		return "cancelled in " + where, nil
	case !booked.IsZero() && !ca.StartsAt.IsZero() && !ca.StartsAt.Equal(booked):
		return "moved to " + said(ca.StartsAt) + " in " + where, nil
	}
	return "confirmed", nil
}
