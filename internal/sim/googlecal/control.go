package googlecal

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/oncecall/oncecall/internal/sim/simkit"
)

// token is the service-account token endpoint (the key file's token_uri):
// a JWT-bearer grant is answered with an access token the API accepts. The
// assertion's signature is not checked (the fake has no public keys); its
// claims must name an issuer and the calendar scope.
func (s *Sim) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		simkit.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	parts := strings.Split(r.PostForm.Get("assertion"), ".")
	var claims struct {
		Iss, Scope, Sub string
	}
	if len(parts) != 3 {
		simkit.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "not a JWT"})
		return
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(raw, &claims) != nil || claims.Iss == "" ||
		!strings.Contains(claims.Scope, "https://www.googleapis.com/auth/calendar") {
		simkit.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "the assertion needs iss and the calendar scope"})
		return
	}
	b := make([]byte, 16)
	rand.Read(b)
	tok := "ya29.sim-" + hex.EncodeToString(b)
	s.mu.Lock()
	s.tokens[tok] = true
	s.mu.Unlock()
	simkit.WriteJSON(w, http.StatusOK, map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3599})
}

// authed requires a bearer token the token endpoint issued.
func (s *Sim) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		known := ok && s.tokens[tok]
		s.mu.Unlock()
		if !known {
			writeError(w, http.StatusUnauthorized, "authError", "Invalid Credentials")
			return
		}
		h(w, r)
	}
}

// Ledger is the answer of GET /sim/ledger: every event of every calendar,
// cancelled ones included, in the order they were made. It never lags.
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

// DirectEvent is what /sim/events takes: an event made, moved or cancelled
// by a person in the calendar, outside oncecall.
type DirectEvent struct {
	Calendar string    `json:"calendar"`
	ID       string    `json:"id,omitempty"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Summary  string    `json:"summary,omitempty"`
}

func readDirect(w http.ResponseWriter, r *http.Request, needTimes bool) (DirectEvent, bool) {
	var d DirectEvent
	if err := json.NewDecoder(r.Body).Decode(&d); err != nil || d.Calendar == "" ||
		(needTimes && !d.End.After(d.Start)) {
		simkit.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "need calendar, and start before end"})
		return d, false
	}
	return d, true
}

// direct makes an event as a person would in the calendar (a random id).
func (s *Sim) direct(w http.ResponseWriter, r *http.Request) {
	d, ok := readDirect(w, r, true)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	in := Event{
		ID: newID(), Summary: d.Summary,
		Start: &DateTime{DateTime: d.Start.UTC().Format(time.RFC3339)}, End: &DateTime{DateTime: d.End.UTC().Format(time.RFC3339)},
	}
	ev := &stored{LedgerEvent: LedgerEvent{Calendar: d.Calendar, Event: s.fill(in, d.Calendar), Start: d.Start.UTC(), End: d.End.UTC(), Direct: true}, created: time.Now()}
	s.calendar(d.Calendar)[in.ID] = ev
	s.order = append(s.order, ev)
	s.changed(d.Calendar)
	simkit.WriteJSON(w, http.StatusCreated, ev.LedgerEvent)
}

// directMove moves an event as a person would: a new time and etag.
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
	ev.Event.Start = &DateTime{DateTime: ev.Start.Format(time.RFC3339), TimeZone: ev.Event.Start.TimeZone}
	ev.Event.End = &DateTime{DateTime: ev.End.Format(time.RFC3339), TimeZone: ev.Event.End.TimeZone}
	ev.Event.Sequence++
	ev.Event.Etag, ev.Event.Updated = s.etag(), time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	s.changed(d.Calendar)
	simkit.WriteJSON(w, http.StatusOK, ev.LedgerEvent)
}

// directCancel deletes an event as a person would.
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
	s.cancel(ev)
	s.changed(d.Calendar)
	simkit.WriteJSON(w, http.StatusOK, ev.LedgerEvent)
}
