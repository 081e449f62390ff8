package api

import (
	"errors"
	"io"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/provider/calendars"
)

// calendarNotification takes a calendar provider's change notification
// for one connection (POST /v1/calendar-notifications/{provider}/{connection}):
// Google's watch channels, Microsoft Graph's subscriptions (and their
// validation requests), Cal.com's webhooks. It carries no API key; the
// connection's notification secret verifies it (calendars.Service.Notify).
// A forged or unsigned one is 401 and changes nothing; a verified one drops
// what this server read of the calendar and is acknowledged 202 (a
// validation request is answered with its token, text/plain).
func (s *Server) calendarNotification(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Calendars == nil {
		writeError(w, r, fault.New(fault.NotFound, "this server reaches no tenant's own calendar"))
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			writeError(w, r, fault.New(fault.PayloadTooLarge, "the notification body is too large"))
			return
		}
		writeError(w, r, fault.New(fault.InvalidInput, "the notification body cannot be read"))
		return
	}
	noticed, err := s.cfg.Calendars.Notify(r.Context(), calendars.Notification{
		Provider: chi.URLParam(r, "provider"), Connection: chi.URLParam(r, "connection"),
		Header: r.Header, Query: r.URL.Query(), Body: body,
	})
	switch {
	case errors.Is(err, calendars.ErrNoNotifications):
		writeError(w, r, fault.New(fault.NotFound, "no calendar connection by that id and provider takes change notifications here"))
		return
	case errors.Is(err, calendars.ErrNotVerified):
		writeError(w, r, fault.New(fault.Unauthorized, "%s; nothing was changed", err.Error()))
		return
	case errors.Is(err, calendars.ErrBadNotification):
		writeError(w, r, fault.New(fault.InvalidInput, "%s; nothing was changed", err.Error()))
		return
	case err != nil:
		writeError(w, r, db.Fault(err))
		return
	}
	if noticed.Echo != "" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff") // the token is the caller's text
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, noticed.Echo)
		return
	}
	writeJSON(w, http.StatusAccepted, calendarNotice{Received: true, Calendars: len(noticed.Calendars)})
}

// calendarNotice is the answer to a verified change notification.
type calendarNotice struct {
	Received bool `json:"received"`
	// Calendars is how many calendars will be read anew.
	Calendars int `json:"calendars"`
}
