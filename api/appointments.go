package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/dashatool"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/wire"
)

// listedSlot is a slot as GET /v1/slots lists it: for a slot of a
// practitioner, with the names of who and where (their ids are the
// slot's) and the timezone it is spoken in.
type listedSlot struct {
	wire.Slot
	Practitioner string `json:"practitioner,omitempty"`
	Location     string `json:"location,omitempty"`
	Timezone     string `json:"timezone,omitempty"`
}

// listSlots answers GET /v1/slots: the tenant's slots in start order with
// the filters of find_available_slots as query parameters, and available.
func (s *Server) listSlots(w http.ResponseWriter, r *http.Request) {
	params, err := queryParams(r, "available", "from", "to", "date", "part_of_day", "service_id", "practitioner_id",
		"location_id", "after", "limit")
	if err != nil {
		writeError(w, r, err)
		return
	}
	in := dashatool.SlotsInput{
		ServiceID: params["service_id"], PractitionerID: params["practitioner_id"], LocationID: params["location_id"],
		Date: params["date"], To: params["to"], PartOfDay: params["part_of_day"], After: params["after"],
	}
	if v, ok := params["from"]; ok {
		in.From = &v
	}
	if err := in.Normalize(); err != nil {
		writeError(w, r, err)
		return
	}
	onlyAvailable, limit := false, 100
	if v, ok := params["available"]; ok {
		if onlyAvailable, err = strconv.ParseBool(v); err != nil {
			writeError(w, r, fault.Field("available", "must be true or false"))
			return
		}
	}
	if v, ok := params["limit"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			writeError(w, r, fault.Field("limit", "must be an integer from 1 to 500"))
			return
		}
		limit = n
	}
	ctx, tenant := r.Context(), tenantFrom(r.Context()).ID
	clock, err := s.tenantClock(ctx, tenant)
	if err != nil {
		writeError(w, r, err)
		return
	}
	q, err := s.slotQuery(ctx, tenant, in, clock.Zone, clock.Loc)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if in.From != nil { // a listing may start in the past
		if t, err := time.Parse(time.RFC3339Nano, *in.From); err == nil {
			q.From = t
		} else if d, err := time.Parse(time.DateOnly, *in.From); err == nil {
			q.From = d.Add(-15 * time.Hour)
		}
	}
	q.OnlyAvailable, q.Limit = onlyAvailable, limit+1
	slots, err := s.openSlots(ctx, tenant, q)
	if err != nil {
		writeError(w, r, db.Fault(err))
		return
	}
	out := map[string]any{}
	if len(slots) > limit {
		slots = slots[:limit]
		out["next_after"] = slots[limit-1].ID
	}
	list := make([]listedSlot, len(slots))
	for i, sl := range slots {
		list[i] = listedSlot{Slot: wire.FromSlot(sl.Slot)}
		if sl.Catalog() {
			list[i].Practitioner, list[i].Location, list[i].Timezone = sl.Practitioner, sl.Location, sl.Timezone
		}
	}
	out["slots"] = list
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getAppointment(w http.ResponseWriter, r *http.Request) {
	getRecord(s, "appointment_id", "appointment", viewed(s.appointmentNow, wire.FromAppointment))(w, r)
}

// appointmentNow is an appointment as it is now: one a person moved in
// the business's calendar to another time is at that time and at none of
// oncecall's slots (its slot_id is null), whatever slot it was booked in.
func (s *Server) appointmentNow(ctx context.Context, tenant, id uuid.UUID) (oncecall.Appointment, error) {
	a, err := s.appointmentByID(ctx, tenant, id)
	if err != nil || a.SlotID == uuid.Nil {
		return a, err
	}
	p, err := s.cfg.Store.SlotPlace(ctx, tenant, a.SlotID)
	switch {
	case errors.Is(err, db.ErrNotFound):
		a.SlotID = uuid.Nil
	case err != nil:
		return a, db.Fault(err)
	case !p.StartsAt.Equal(a.StartsAt):
		a.SlotID = uuid.Nil
	}
	return a, nil
}
