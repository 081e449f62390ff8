package msgraph

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/oncecall/oncecall/internal/sim/simkit"
)

// Subscription is a change notification subscription as Graph takes and
// answers it.
type Subscription struct {
	ID                 string    `json:"id,omitempty"`
	Resource           string    `json:"resource"`
	ChangeType         string    `json:"changeType"`
	NotificationURL    string    `json:"notificationUrl"`
	ExpirationDateTime time.Time `json:"expirationDateTime"`
	ClientState        string    `json:"clientState,omitempty"`
}

// maxSubscription is the longest an Outlook event subscription may live.
const maxSubscription = 4230 * time.Minute

// subscribe creates a subscription to a mailbox's events, as Graph does:
// it first posts a validation request to the notification URL
// (?validationToken=..., text/plain) and creates the subscription only if
// the endpoint answers 200 with the token as its body within 10 seconds;
// then every created, updated or deleted event of the mailbox is posted
// there with the subscription's clientState.
func (s *Sim) subscribe(w http.ResponseWriter, r *http.Request) {
	var in Subscription
	if !decode(w, r, &in) {
		return
	}
	user, ok := mailbox(in.Resource)
	switch {
	case !ok:
		writeError(w, http.StatusBadRequest, "InvalidRequest", "resource must be users/{id}/events")
		return
	case in.NotificationURL == "" || in.ChangeType == "":
		writeError(w, http.StatusBadRequest, "InvalidRequest", "changeType and notificationUrl are required")
		return
	case in.ExpirationDateTime.After(time.Now().Add(maxSubscription)):
		writeError(w, http.StatusBadRequest, "InvalidRequest", "expirationDateTime is too far in the future")
		return
	}
	b := make([]byte, 16)
	rand.Read(b)
	token := "Validation: " + hex.EncodeToString(b)
	h := http.Header{}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	status, answer := s.kit.Notes.Post("graph validation", in.NotificationURL+query(in.NotificationURL)+"validationToken="+url.QueryEscape(token), h, nil)
	if status != http.StatusOK || string(answer) != token {
		writeError(w, http.StatusBadRequest, "ValidationError", "Subscription validation request failed. Notification endpoint must respond with 200 OK to validation request.")
		return
	}
	in.ID = newID()
	s.mu.Lock()
	s.subs[strings.ToLower(user)] = append(s.subs[strings.ToLower(user)], in)
	s.mu.Unlock()
	simkit.WriteJSON(w, http.StatusCreated, in)
}

func query(u string) string {
	if strings.Contains(u, "?") {
		return "&"
	}
	return "?"
}

// mailbox is the user of a resource users/{id}/events (or
// users/{id}/calendar/events).
func mailbox(resource string) (string, bool) {
	parts := strings.Split(strings.Trim(resource, "/"), "/")
	if len(parts) < 3 || !strings.EqualFold(parts[0], "users") || !strings.EqualFold(parts[len(parts)-1], "events") {
		return "", false
	}
	return parts[1], true
}

// changed posts a change of an event of a mailbox to its subscriptions
// (s.mu held).
func (s *Sim) changed(user, id, change string, ev Event) {
	for _, sub := range s.subs[strings.ToLower(user)] {
		if !strings.Contains(sub.ChangeType, change) {
			continue
		}
		resource := "Users/" + user + "/Events/" + id
		body, _ := json.Marshal(map[string]any{"value": []map[string]any{{
			"subscriptionId": sub.ID, "subscriptionExpirationDateTime": sub.ExpirationDateTime, "changeType": change,
			"resource": resource, "clientState": sub.ClientState, "tenantId": "00000000-0000-0000-0000-000000000001",
			"resourceData": map[string]string{"@odata.type": "#Microsoft.Graph.Event", "@odata.id": resource,
				"@odata.etag": ev.ODataEtag, "id": id},
		}}})
		h := http.Header{}
		h.Set("Content-Type", "application/json")
		s.kit.Notes.Send("graph "+change, sub.NotificationURL, h, body)
	}
}
