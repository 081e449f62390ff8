package api

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"
	"github.com/twilio/twilio-go/client"

	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/provider/twilioprovider"
)

// twilioNotice is the answer to a verified status callback: matched tells
// whether it named a step whose outcome was unknown.
type twilioNotice struct {
	Received bool `json:"received"`
	Matched  bool `json:"matched"`
}

// twilioStatus takes Twilio's status callbacks about the messages oncecall
// sent. X-Twilio-Signature is verified with twilio-go's RequestValidator
// against TWILIO_AUTH_TOKEN and the URL Twilio was given (ONCECALL_PUBLIC_URL
// and this route, with the step in its query); a forged one is 401 and
// changes nothing. A verified callback about a step whose outcome is
// unknown records the message's SID as where its next check looks first
// and makes that check due now (the reconciler asks Twilio under the
// action's lease); every other callback (a step already settled, an
// unknown step reference, duplicates) is acknowledged and changes nothing.
// See docs/providers/twilio.md.
func (s *Server) twilioStatus(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			writeError(w, r, fault.New(fault.PayloadTooLarge, "the callback body is too large"))
			return
		}
		writeError(w, r, fault.New(fault.InvalidInput, "the callback body cannot be read"))
		return
	}
	form, err := url.ParseQuery(string(body))
	params := make(map[string]string, len(form))
	for k, v := range form {
		params[k] = v[0]
	}
	target := strings.TrimRight(s.cfg.PublicURL, "/") + twilioprovider.StatusPath
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	rv := client.NewRequestValidator(s.cfg.TwilioAuthToken)
	if err != nil || !rv.Validate(target, params, r.Header.Get("X-Twilio-Signature")) {
		writeError(w, r, fault.New(fault.Unauthorized, "the X-Twilio-Signature header does not verify this callback"))
		return
	}
	actionID, stepName, _ := strings.Cut(r.URL.Query().Get(twilioprovider.StepParam), "/")
	action, perr := uuid.Parse(actionID)
	sid := form.Get("MessageSid")
	if perr != nil || stepName == "" || sid == "" {
		// Not a message of a step of oncecall's: nothing to do.
		writeJSON(w, http.StatusOK, twilioNotice{Received: true})
		return
	}
	matched, err := s.cfg.Store.NoticeStepRef(r.Context(), action, stepName, sid, map[string]string{
		"provider": "twilio", "provider_ref": sid, "status": form.Get("MessageStatus"),
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, twilioNotice{Received: true, Matched: matched})
}
