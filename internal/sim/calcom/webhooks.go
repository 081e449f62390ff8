package calcom

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/oncecall/oncecall/internal/sim/simkit"
)

// Webhook is a webhook of the account, as /v2/webhooks takes and answers
// it (its secret is never answered).
type Webhook struct {
	ID            int      `json:"id"`
	SubscriberURL string   `json:"subscriberUrl"`
	Triggers      []string `json:"triggers"`
	Active        bool     `json:"active"`
	Secret        string   `json:"-"`
}

// createWebhook creates a webhook, as POST /v2/webhooks does.
func (s *Sim) createWebhook(w http.ResponseWriter, r *http.Request) {
	var in struct {
		SubscriberURL string   `json:"subscriberUrl"`
		Triggers      []string `json:"triggers"`
		Active        bool     `json:"active"`
		Secret        string   `json:"secret"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&in); err != nil || in.SubscriberURL == "" || len(in.Triggers) == 0 {
		badRequest(w, "subscriberUrl and triggers are required")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	hook := Webhook{ID: s.seq, SubscriberURL: in.SubscriberURL, Triggers: in.Triggers, Active: in.Active, Secret: in.Secret}
	s.hooks = append(s.hooks, hook)
	simkit.WriteJSON(w, http.StatusCreated, success(hook))
}

// signature is what Cal.com sends as X-Cal-Signature-256: the hex
// HMAC-SHA256 of the body with the webhook's secret, or
// "no-secret-provided" without one.
func signature(secret string, body []byte) string {
	if secret == "" {
		return "no-secret-provided"
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// hook posts a booking's change to the webhooks that listen for trigger
// (s.mu held): {"triggerEvent", "createdAt", "payload"}, signed.
func (s *Sim) hook(trigger string, b Booking) {
	payload := map[string]any{
		"uid": b.UID, "bookingId": b.ID, "eventTypeId": b.EventTypeID, "title": b.Title,
		"startTime": b.Start, "endTime": b.End, "status": map[string]string{"accepted": "ACCEPTED", "cancelled": "CANCELLED"}[b.Status],
		"metadata": b.Metadata,
	}
	if b.RescheduledFromUID != "" {
		payload["rescheduleUid"] = b.RescheduledFromUID
	}
	body, _ := json.Marshal(map[string]any{"triggerEvent": trigger, "createdAt": stamp(time.Now()), "payload": payload})
	for _, h := range s.hooks {
		if !h.Active || !slices.Contains(h.Triggers, trigger) {
			continue
		}
		hdr := http.Header{}
		hdr.Set("Content-Type", "application/json")
		hdr.Set("X-Cal-Signature-256", signature(h.Secret, body))
		s.kit.Notes.Send("calcom "+trigger, h.SubscriberURL, hdr, body)
	}
}
