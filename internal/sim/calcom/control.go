package calcom

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/oncecall/oncecall/internal/sim/simkit"
)

// Ledger is the answer of GET /sim/ledger: every booking ever made,
// cancelled and rescheduled ones included, in the order they were made.
// It never lags.
type Ledger struct {
	Bookings []LedgerBooking `json:"bookings"`
}

func (s *Sim) ledger(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	out := Ledger{Bookings: make([]LedgerBooking, 0, len(s.order))}
	for _, b := range s.order {
		out.Bookings = append(out.Bookings, b.LedgerBooking)
	}
	s.mu.Unlock()
	simkit.WriteJSON(w, http.StatusOK, out)
}

// Direct is what /sim/bookings takes: a booking made, rescheduled or
// cancelled by a person on Cal.com's own pages, outside oncecall.
type Direct struct {
	EventTypeID int       `json:"event_type_id,omitempty"`
	UID         string    `json:"uid,omitempty"`
	Start       time.Time `json:"start"`
	Minutes     int       `json:"minutes,omitempty"`
	Name        string    `json:"name,omitempty"`
}

func readDirect(w http.ResponseWriter, r *http.Request) (Direct, bool) {
	var d Direct
	if err := json.NewDecoder(r.Body).Decode(&d); err != nil {
		simkit.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "the body cannot be read"})
		return d, false
	}
	return d, true
}

// direct books as a person on the booking page would (no metadata).
func (s *Sim) direct(w http.ResponseWriter, r *http.Request) {
	d, ok := readDirect(w, r)
	if !ok {
		return
	}
	if d.EventTypeID <= 0 || d.Start.IsZero() {
		simkit.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "need event_type_id and start"})
		return
	}
	minutes := d.Minutes
	if minutes <= 0 {
		minutes = DefaultLength
	}
	start := d.Start.UTC()
	end := start.Add(time.Duration(minutes) * time.Minute)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.taken(d.EventTypeID, start, end, "") != nil {
		simkit.WriteJSON(w, http.StatusConflict, map[string]string{"error": "that time is booked"})
		return
	}
	name := cmpStr(d.Name, "Walk-in")
	b := s.add(Booking{Title: "Appointment between Host and " + name, EventTypeID: d.EventTypeID, Duration: minutes,
		Attendees:     []Attendee{{Name: name, Email: "someone@example.com", DisplayEmail: "someone@example.com", TimeZone: "UTC"}},
		BookingFields: map[string]any{"name": name}}, start, end, true)
	s.hook("BOOKING_CREATED", b)
	simkit.WriteJSON(w, http.StatusCreated, s.byUID[b.UID].LedgerBooking)
}

// directReschedule reschedules as the attendee would from their e-mail.
func (s *Sim) directReschedule(w http.ResponseWriter, r *http.Request) {
	d, ok := readDirect(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, found := s.byUID[d.UID]
	if !found {
		simkit.WriteJSON(w, http.StatusNotFound, map[string]string{"error": "no such booking"})
		return
	}
	next, why := s.move(b, d.Start.UTC(), "rescheduled by the attendee")
	if why != "" {
		simkit.WriteJSON(w, http.StatusConflict, map[string]string{"error": why})
		return
	}
	simkit.WriteJSON(w, http.StatusCreated, s.byUID[next.UID].LedgerBooking)
}

// directCancel cancels as the attendee would.
func (s *Sim) directCancel(w http.ResponseWriter, r *http.Request) {
	d, ok := readDirect(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, found := s.byUID[d.UID]
	if !found || b.Booking.Status != "accepted" {
		simkit.WriteJSON(w, http.StatusNotFound, map[string]string{"error": "no such accepted booking"})
		return
	}
	b.Booking.Status, b.Booking.CancellationReason = "cancelled", "cancelled by the attendee"
	s.touch(&b.Booking)
	s.hook("BOOKING_CANCELLED", b.Booking)
	simkit.WriteJSON(w, http.StatusOK, b.LedgerBooking)
}
