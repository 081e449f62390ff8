package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/oncecall/oncecall/api/wire"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
)

func (s *Server) listSlots(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := db.SlotFilter{From: time.Now(), Limit: 100}
	if v := q.Get("available"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeError(w, r, fault.Field("available", "must be true or false"))
			return
		}
		f.OnlyAvailable = b
	}
	if v := q.Get("from"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			writeError(w, r, fault.Field("from", "must be an RFC 3339 time"))
			return
		}
		f.From = t
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			writeError(w, r, fault.Field("limit", "must be an integer from 1 to 500"))
			return
		}
		f.Limit = n
	}
	slots, err := s.cfg.Store.ListSlots(r.Context(), tenantFrom(r.Context()).ID, f)
	if err != nil {
		writeError(w, r, db.Fault(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"slots": wire.FromSlots(slots)})
}

func (s *Server) getAppointment(w http.ResponseWriter, r *http.Request) {
	getRecord(s, "appointment_id", "appointment", viewed(s.cfg.Store.AppointmentByID, wire.FromAppointment))(w, r)
}
