package googlecal

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/oncecall/oncecall/internal/sim/simkit"
)

// Channel is a watch channel as events.watch takes and answers it.
type Channel struct {
	Kind        string            `json:"kind,omitempty"`
	ID          string            `json:"id"`
	ResourceID  string            `json:"resourceId,omitempty"`
	ResourceURI string            `json:"resourceUri,omitempty"`
	Token       string            `json:"token,omitempty"`
	Expiration  string            `json:"expiration,omitempty"`
	Type        string            `json:"type"`
	Address     string            `json:"address"`
	Params      map[string]string `json:"params,omitempty"`
}

type watch struct {
	Channel
	messages int
}

// watchEvents opens a watch channel on a calendar's events, as
// events.watch does: the channel id must be new, the type web_hook; a
// first notification with resource state "sync" follows, then one with
// "exists" after every change of the calendar's events.
func (s *Sim) watchEvents(w http.ResponseWriter, r *http.Request) {
	var ch Channel
	if !decode(w, r, &ch) {
		return
	}
	if ch.ID == "" || ch.Type != "web_hook" || ch.Address == "" {
		writeError(w, http.StatusBadRequest, "required", "A channel needs an id, type web_hook and an address.")
		return
	}
	ttl := 7 * 24 * time.Hour
	if v, err := strconv.Atoi(ch.Params["ttl"]); err == nil && v > 0 && time.Duration(v)*time.Second < ttl {
		ttl = time.Duration(v) * time.Second
	}
	cal := r.PathValue("calendar")
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ws := range s.watches {
		for _, x := range ws {
			if x.ID == ch.ID {
				writeError(w, http.StatusBadRequest, "channelIdNotUnique", "Channel id not unique.")
				return
			}
		}
	}
	ch.Kind, ch.ResourceID = "api#channel", newID()
	ch.ResourceURI = "https://www.googleapis.com/calendar/v3/calendars/" + url.PathEscape(cal) + "/events?alt=json"
	ch.Expiration = strconv.FormatInt(time.Now().Add(ttl).UnixMilli(), 10)
	x := &watch{Channel: ch}
	s.watches[cal] = append(s.watches[cal], x)
	s.notify(x, "sync")
	answer := ch
	answer.Address, answer.Type, answer.Params = "", "", nil
	simkit.WriteJSON(w, http.StatusOK, answer)
}

// changed notifies the channels of a calendar of a change of its events
// (s.mu held).
func (s *Sim) changed(cal string) {
	for _, x := range s.watches[cal] {
		s.notify(x, "exists")
	}
}

// notify posts one notification of a channel, with the headers Google
// sends and no body (s.mu held).
func (s *Sim) notify(x *watch, state string) {
	x.messages++
	h := http.Header{}
	h.Set("X-Goog-Channel-ID", x.ID)
	h.Set("X-Goog-Message-Number", strconv.Itoa(x.messages))
	h.Set("X-Goog-Resource-ID", x.ResourceID)
	h.Set("X-Goog-Resource-State", state)
	h.Set("X-Goog-Resource-URI", x.ResourceURI)
	h.Set("X-Goog-Channel-Expiration", x.Expiration)
	if x.Token != "" {
		h.Set("X-Goog-Channel-Token", x.Token)
	}
	s.kit.Notes.Send("google "+state, x.Address, h, nil)
}
