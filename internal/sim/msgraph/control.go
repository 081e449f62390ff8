package msgraph

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/oncecall/oncecall/internal/sim/simkit"
)

// token is the Microsoft identity platform's client-credentials grant:
// any client id and secret, for the scope https://graph.microsoft.com/.default.
func (s *Sim) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" {
		simkit.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id == "" || secret == "" || r.PostForm.Get("scope") != "https://graph.microsoft.com/.default" {
		simkit.WriteJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client",
			"error_description": "client id, secret and the scope https://graph.microsoft.com/.default are required"})
		return
	}
	tok := "eyJ0eXAi.sim." + randomHex(16)
	s.mu.Lock()
	s.tokens[tok] = true
	s.mu.Unlock()
	simkit.WriteJSON(w, http.StatusOK, map[string]any{"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": tok})
}

// authed requires a bearer token the token endpoint issued.
func (s *Sim) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		known := ok && s.tokens[tok]
		s.mu.Unlock()
		if !known {
			writeError(w, http.StatusUnauthorized, "InvalidAuthenticationToken", "Access token is empty or invalid.")
			return
		}
		h(w, r)
	}
}

// Ledger is the answer of GET /sim/ledger: every event ever made, deleted
// ones included, in the order they were made. It never lags.
type Ledger struct {
	Events []LedgerEvent `json:"events"`
}

func (s *Sim) ledger(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	out := Ledger{Events: make([]LedgerEvent, 0, len(s.order))}
	for _, ev := range s.order {
		out.Events = append(out.Events, ev.LedgerEvent)
	}
	s.mu.Unlock()
	simkit.WriteJSON(w, http.StatusOK, out)
}

// DirectEvent is what /sim/events takes: an event made, moved or deleted
// by a person in Outlook, outside oncecall. Calendar is the mailbox.
type DirectEvent struct {
	Calendar string    `json:"calendar"`
	ID       string    `json:"id,omitempty"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Summary  string    `json:"summary,omitempty"`
}

func readDirect(w http.ResponseWriter, r *http.Request, needTimes bool) (DirectEvent, bool) {
	var d DirectEvent
	if err := json.NewDecoder(r.Body).Decode(&d); err != nil || d.Calendar == "" || (needTimes && !d.End.After(d.Start)) {
		simkit.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "need calendar, and start before end"})
		return d, false
	}
	return d, true
}

func (s *Sim) direct(w http.ResponseWriter, r *http.Request) {
	d, ok := readDirect(w, r, true)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := Event{ID: newID(), CreatedDateTime: stamp(), Type: "singleInstance", Subject: d.Summary, ShowAs: "busy",
		Start: utc(d.Start), End: utc(d.End)}
	version(&e)
	ev := &stored{LedgerEvent: LedgerEvent{User: d.Calendar, Event: e, Start: d.Start.UTC(), End: d.End.UTC(), Direct: true}, created: time.Now()}
	s.user(d.Calendar)[e.ID] = ev
	s.order = append(s.order, ev)
	s.changed(d.Calendar, e.ID, "created", e)
	simkit.WriteJSON(w, http.StatusCreated, ev.LedgerEvent)
}

func (s *Sim) directMove(w http.ResponseWriter, r *http.Request) {
	d, ok := readDirect(w, r, true)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ev, found := s.events[d.Calendar][d.ID]
	if !found {
		simkit.WriteJSON(w, http.StatusNotFound, map[string]string{"error": "no such event"})
		return
	}
	ev.Start, ev.End = d.Start.UTC(), d.End.UTC()
	ev.Event.Start, ev.Event.End = utc(ev.Start), utc(ev.End)
	version(&ev.Event)
	s.changed(d.Calendar, ev.Event.ID, "updated", ev.Event)
	simkit.WriteJSON(w, http.StatusOK, ev.LedgerEvent)
}

func (s *Sim) directCancel(w http.ResponseWriter, r *http.Request) {
	d, ok := readDirect(w, r, false)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ev, found := s.events[d.Calendar][d.ID]
	if !found {
		simkit.WriteJSON(w, http.StatusNotFound, map[string]string{"error": "no such event"})
		return
	}
	s.remove(ev)
	s.changed(d.Calendar, ev.Event.ID, "deleted", ev.Event)
	simkit.WriteJSON(w, http.StatusOK, ev.LedgerEvent)
}
