package providersim

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The Twilio mode: the subset of Twilio's Messages API that oncecall's
// Twilio adapter sends through twilio-go (create a message, fetch it by SID,
// list messages by To, From and DateSent, page by page), with Basic
// authentication by account SID and auth token, a ledger of every message,
// and status callbacks signed as Twilio signs them (X-Twilio-Signature:
// base64 of the HMAC-SHA1, keyed with the auth token, of the callback URL
// followed by the POST parameters sorted by name, each name then value).
// Twilio has no idempotency keys: every create is a new message. A message
// has no date_sent until it is sent: it is created queued (accepted when a
// Messaging Service sends it), then sent and delivered, unless
// TwilioDelivery keeps it queued; TwilioDelivery also rewrites the stored
// text as Twilio's link shortening does. The messaging faults apply
// (drop_response and fail_after_commit create the message first,
// fail_before_commit and down change nothing, delay waits before creating,
// lookup_lag hides new messages from fetch and list, reject=CODE refuses
// with Twilio's 400 21610), and the callback faults of TwilioCallbacks.

// Test credentials of the Twilio mode when Config leaves them unset.
const (
	TwilioTestAccountSID = "ACsim0000000000000000000000000000"
	TwilioTestAuthToken  = "simtwiliotoken0000000000000000000"
)

// TwilioMessage is the simulator's Message resource (Twilio's JSON names).
type TwilioMessage struct {
	SID                 string `json:"sid"`
	AccountSID          string `json:"account_sid"`
	MessagingServiceSID string `json:"messaging_service_sid,omitempty"`
	From                string `json:"from,omitempty"`
	To                  string `json:"to"`
	Body                string `json:"body"`
	Status              string `json:"status"`
	Direction           string `json:"direction"`
	NumSegments         string `json:"num_segments"`
	DateCreated         string `json:"date_created"`
	// DateSent is null until the message is sent, as in Twilio's payloads.
	DateSent    *string `json:"date_sent"`
	DateUpdated string  `json:"date_updated"`
	APIVersion  string  `json:"api_version"`
	URI         string  `json:"uri"`
	// StatusCallback is where its callbacks go (Twilio does not return it;
	// the simulator's ledger shows it for audits).
	StatusCallback string `json:"oncecall_sim_status_callback,omitempty"`
	// Callbacks counts the status callbacks delivered for it.
	Callbacks int `json:"oncecall_sim_callbacks"`
	// Requested is the text the create asked for, when Twilio stored
	// another (TwilioDelivery.ShortenLinks); for audits, not Twilio's.
	Requested string `json:"oncecall_sim_requested_body,omitempty"`

	created, sent time.Time
	visible       time.Time
}

// TwilioDelivery is what becomes of the messages created after it is set,
// beyond their callbacks.
type TwilioDelivery struct {
	// Queued keeps them queued (accepted, for a Messaging Service): never
	// sent, so with no date_sent and no status callbacks, as a long
	// sending queue or a rate-limited sender does.
	Queued bool `json:"queued"`
	// ShortenLinks stores every http(s) link of a text as a short link,
	// as Twilio's link shortening does: the stored body is not the text
	// that was sent for creation.
	ShortenLinks bool `json:"shorten_links"`
}

// TwilioCallbacks are the Twilio mode's callback faults, for the
// messages created after they are set.
type TwilioCallbacks struct {
	// Duplicate delivers every status callback twice.
	Duplicate bool `json:"duplicate"`
	// BeforeAnswer delivers the callback before the create's answer is
	// written (Twilio's own order is not guaranteed).
	BeforeAnswer bool `json:"before_answer"`
	// Off delivers no callbacks at all.
	Off bool `json:"off"`
}

type twilioState struct {
	mu        sync.Mutex
	seq       int
	messages  map[string]*TwilioMessage
	order     []string
	callbacks TwilioCallbacks
	delivery  TwilioDelivery
	// pending counts creates in their delay (healthz's in_flight).
	pending int
	// sid and token are the account's credentials.
	sid, token string
}

func newTwilioState(sid, token string) *twilioState {
	if sid == "" {
		sid = TwilioTestAccountSID
	}
	if token == "" {
		token = TwilioTestAuthToken
	}
	return &twilioState{messages: map[string]*TwilioMessage{}, sid: sid, token: token}
}

// SetTwilioCallbacks sets the callback faults of later messages.
func (m *Main) SetTwilioCallbacks(c TwilioCallbacks) {
	m.twilio.mu.Lock()
	defer m.twilio.mu.Unlock()
	m.twilio.callbacks = c
}

// SetTwilioDelivery sets what becomes of later messages.
func (m *Main) SetTwilioDelivery(d TwilioDelivery) {
	m.twilio.mu.Lock()
	defer m.twilio.mu.Unlock()
	m.twilio.delivery = d
}

// TwilioAccount is the Twilio mode's account SID and auth token.
func (m *Main) TwilioAccount() (sid, token string) { return m.twilio.sid, m.twilio.token }

const twilioPrefix = "/2010-04-01/Accounts/{account}/Messages"

func (m *Main) twilioRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST "+twilioPrefix+".json", m.twilioCreate)
	mux.HandleFunc("GET "+twilioPrefix+".json", m.twilioList)
	mux.HandleFunc("GET "+twilioPrefix+"/{sid}", m.twilioFetch)
	mux.HandleFunc("GET /twilio/ledger", m.twilioLedger)
	mux.HandleFunc("POST /twilio/callbacks", m.twilioSetCallbacks)
	mux.HandleFunc("POST /twilio/delivery", m.twilioSetDelivery)
	mux.HandleFunc("POST /twilio/stray-callback", m.twilioStray)
}

// twilioError answers as Twilio does: {"code","message","more_info","status"}.
func twilioError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{
		"code": code, "message": msg, "more_info": fmt.Sprintf("https://www.twilio.com/docs/errors/%d", code), "status": status,
	})
}

// twilioAuth checks Basic authentication against the account of the path.
func (m *Main) twilioAuth(w http.ResponseWriter, r *http.Request) bool {
	logOf(r).capability = Messaging
	user, pass, ok := r.BasicAuth()
	if !ok || user != m.twilio.sid || r.PathValue("account") != m.twilio.sid ||
		subtle.ConstantTimeCompare([]byte(pass), []byte(m.twilio.token)) != 1 {
		twilioError(w, http.StatusUnauthorized, 20003, "Authenticate")
		return false
	}
	return true
}

// twilioTime is Twilio's date format (RFC 2822).
func twilioTime(t time.Time) string { return t.UTC().Format(time.RFC1123Z) }

func (m *Main) twilioCreate(w http.ResponseWriter, r *http.Request) {
	if !m.twilioAuth(w, r) {
		return
	}
	if err := r.ParseForm(); err != nil {
		twilioError(w, http.StatusBadRequest, 21100, "the form body cannot be read")
		return
	}
	f, ok := m.faultsFor(w, r, Messaging, OnWrite)
	if !ok {
		return
	}
	if f.down {
		closeConn(w, r, "down")
		return
	}
	if !m.twilioSleep(f.delay) {
		twilioError(w, http.StatusServiceUnavailable, 20503, "the simulator is shutting down; nothing was written")
		return
	}
	if f.failBefore {
		twilioError(w, http.StatusServiceUnavailable, 20503, "simulated failure before commit; nothing was written")
		return
	}
	form := r.PostForm
	to, from, service, body := form.Get("To"), form.Get("From"), form.Get("MessagingServiceSid"), form.Get("Body")
	switch {
	case f.reject != "":
		twilioError(w, http.StatusBadRequest, 21610, "Attempt to send to unsubscribed recipient ("+f.reject+")")
		return
	case !validE164(to):
		twilioError(w, http.StatusBadRequest, 21211, "Invalid 'To' Phone Number")
		return
	case from == "" && service == "":
		twilioError(w, http.StatusBadRequest, 21603, "A 'From' or 'MessagingServiceSid' parameter is required to send a message")
		return
	case body == "":
		twilioError(w, http.StatusBadRequest, 21602, "Message body is required")
		return
	}
	now := m.cfg.Now()
	st := m.twilio
	st.mu.Lock()
	st.seq++
	msg := &TwilioMessage{
		SID: fmt.Sprintf("SMsim%027d", st.seq), AccountSID: st.sid, MessagingServiceSID: service, From: from, To: to,
		Body: body, Status: "queued", Direction: "outbound-api", NumSegments: strconv.Itoa(1 + len(body)/160),
		DateCreated: twilioTime(now), DateUpdated: twilioTime(now), APIVersion: "2010-04-01",
		StatusCallback: form.Get("StatusCallback"), created: now, visible: now.Add(f.lookupLag),
	}
	if service != "" && from == "" {
		msg.Status = "accepted"
	}
	if st.delivery.ShortenLinks {
		msg.Body = shortenLinks(body, st.seq)
		if msg.Body != body {
			msg.Requested = body
		}
	}
	msg.URI = "/2010-04-01/Accounts/" + st.sid + "/Messages/" + msg.SID + ".json"
	st.messages[msg.SID] = msg
	st.order = append(st.order, msg.SID)
	answer, cb, queued := *msg, st.callbacks, st.delivery.Queued
	st.mu.Unlock()
	logOf(r).id = msg.SID
	if cb.BeforeAnswer && !queued {
		m.twilioDeliver(msg.SID, cb)
	}
	switch {
	case f.drop:
		closeConn(w, r, "dropped_after_commit")
	case f.failAfter:
		twilioError(w, http.StatusInternalServerError, 20500, "simulated failure after commit")
	default:
		writeJSON(w, http.StatusCreated, answer)
	}
	if !cb.BeforeAnswer && !queued {
		if fl, ok := w.(http.Flusher); ok && !f.drop {
			fl.Flush()
		}
		m.twilioDeliver(msg.SID, cb)
	}
}

// twilioSleep is sleep, counted as in flight.
func (m *Main) twilioSleep(d time.Duration) bool {
	m.twilio.mu.Lock()
	m.twilio.pending++
	m.twilio.mu.Unlock()
	defer func() {
		m.twilio.mu.Lock()
		m.twilio.pending--
		m.twilio.mu.Unlock()
	}()
	return m.sleep(d)
}

func (st *twilioState) inFlight() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.pending
}

func validE164(s string) bool {
	if len(s) < 8 || len(s) > 16 || s[0] != '+' {
		return false
	}
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// visibleAt reports whether a lookup with lag sees msg at now.
func (msg *TwilioMessage) visibleAt(now time.Time, lag time.Duration) bool {
	return !now.Before(msg.visible) && !now.Before(msg.created.Add(lag))
}

func (m *Main) twilioFetch(w http.ResponseWriter, r *http.Request) {
	if !m.twilioAuth(w, r) {
		return
	}
	f, ok := m.faultsFor(w, r, Messaging, OnLookup)
	if !ok || !m.twilioLookupFaults(w, r, f) {
		return
	}
	sid := strings.TrimSuffix(r.PathValue("sid"), ".json")
	now := m.cfg.Now()
	m.twilio.mu.Lock()
	msg, found := m.twilio.messages[sid]
	var c TwilioMessage
	if found {
		c = *msg
		found = msg.visibleAt(now, f.lookupLag)
	}
	m.twilio.mu.Unlock()
	if !found {
		twilioError(w, http.StatusNotFound, 20404, "The requested resource "+r.URL.Path+" was not found")
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// twilioLookupFaults applies a lookup's faults; false when it answered.
func (m *Main) twilioLookupFaults(w http.ResponseWriter, r *http.Request, f faults) bool {
	switch {
	case f.down:
		closeConn(w, r, "down")
	case !m.sleep(f.delay):
		twilioError(w, http.StatusServiceUnavailable, 20503, "the simulator is shutting down")
	case f.failBefore:
		twilioError(w, http.StatusServiceUnavailable, 20503, "simulated failure")
	case f.failAfter:
		twilioError(w, http.StatusInternalServerError, 20500, "simulated failure")
	case f.drop:
		closeConn(w, r, "dropped")
	default:
		return true
	}
	return false
}

// twilioList lists messages, newest first, filtered by To, From and
// DateSent (on or after DateSent>, before DateSent<, on the day of
// DateSent; a message not sent yet has no date_sent and is never in a
// DateSent filter), PageSize at a time (default 50, at most 1000), each page
// naming the next in next_page_uri with a PageToken after its last message,
// as Twilio pages.
func (m *Main) twilioList(w http.ResponseWriter, r *http.Request) {
	if !m.twilioAuth(w, r) {
		return
	}
	f, ok := m.faultsFor(w, r, Messaging, OnLookup)
	if !ok || !m.twilioLookupFaults(w, r, f) {
		return
	}
	q := r.URL.Query()
	bound := func(name string) (time.Time, bool) {
		v := q.Get(name)
		if v == "" {
			return time.Time{}, true
		}
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			return t, true
		}
		t, err := time.Parse(time.DateOnly, v)
		return t, err == nil
	}
	after, ok1 := bound("DateSent>")
	before, ok2 := bound("DateSent<")
	on, ok3 := bound("DateSent")
	size, err := strconv.Atoi(cmpOr(q.Get("PageSize"), "50"))
	if !ok1 || !ok2 || !ok3 || err != nil || size < 1 || size > 1000 {
		twilioError(w, http.StatusBadRequest, 20001, "DateSent must be a date (YYYY-MM-DD) or an RFC 3339 time, PageSize 1 to 1000")
		return
	}
	dated := !after.IsZero() || !before.IsZero() || !on.IsZero()
	token := strings.TrimPrefix(q.Get("PageToken"), "PA")
	now := m.cfg.Now()
	m.twilio.mu.Lock()
	out := []TwilioMessage{}
	more := false
	for _, sid := range slices.Backward(m.twilio.order) {
		if token != "" {
			// The page after the token starts after its message.
			if sid == token {
				token = ""
			}
			continue
		}
		msg := m.twilio.messages[sid]
		switch {
		case !msg.visibleAt(now, f.lookupLag),
			q.Get("To") != "" && msg.To != q.Get("To"),
			q.Get("From") != "" && msg.From != q.Get("From"),
			dated && msg.sent.IsZero(),
			!after.IsZero() && msg.sent.Before(after),
			!before.IsZero() && !msg.sent.Before(before),
			!on.IsZero() && msg.sent.UTC().Format(time.DateOnly) != on.UTC().Format(time.DateOnly):
			continue
		}
		if len(out) == size {
			more = true
			break
		}
		out = append(out, *msg)
	}
	m.twilio.mu.Unlock()
	page, _ := strconv.Atoi(q.Get("Page"))
	uri := func(page int, token string) string {
		v := url.Values{}
		for k, vs := range q {
			if k != "Page" && k != "PageToken" {
				v[k] = vs
			}
		}
		v.Set("PageSize", strconv.Itoa(size))
		v.Set("Page", strconv.Itoa(page))
		if token != "" {
			v.Set("PageToken", token)
		}
		return r.URL.Path + "?" + v.Encode()
	}
	var next any
	if more {
		next = uri(page+1, "PA"+out[len(out)-1].SID)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"messages": out, "page": page, "page_size": size, "first_page_uri": uri(0, ""), "start": page * size,
		"end": page*size + max(len(out)-1, 0), "next_page_uri": next, "previous_page_uri": nil, "uri": r.URL.RequestURI(),
	})
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// links are the http(s) links of a text, up to the next space.
var links = regexp.MustCompile(`https?://[^\s]+`)

// shortenLinks replaces each link of body with a short link of Twilio's
// kind (a domain of the sender's and a code), as link shortening stores it.
func shortenLinks(body string, seq int) string {
	n := 0
	return links.ReplaceAllStringFunc(body, func(string) string {
		n++
		return fmt.Sprintf("https://sim.twil.io/%d%c", seq, 'a'+rune(n%26))
	})
}

// TwilioLedger lists every message the Twilio mode created, oldest first.
func (m *Main) TwilioLedger() []TwilioMessage {
	m.twilio.mu.Lock()
	defer m.twilio.mu.Unlock()
	out := make([]TwilioMessage, 0, len(m.twilio.order))
	for _, sid := range m.twilio.order {
		out = append(out, *m.twilio.messages[sid])
	}
	return out
}

func (m *Main) twilioLedger(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"messages": m.TwilioLedger()})
}

func (m *Main) twilioSetDelivery(w http.ResponseWriter, r *http.Request) {
	var d TwilioDelivery
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<10)).Decode(&d); err != nil {
		writeProblem(w, http.StatusBadRequest, "INVALID_REQUEST", "the body must be {\"queued\",\"shorten_links\"}")
		return
	}
	m.SetTwilioDelivery(d)
	writeJSON(w, http.StatusOK, d)
}

func (m *Main) twilioSetCallbacks(w http.ResponseWriter, r *http.Request) {
	var c TwilioCallbacks
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<10)).Decode(&c); err != nil {
		writeProblem(w, http.StatusBadRequest, "INVALID_REQUEST", "the body must be {\"duplicate\",\"before_answer\",\"off\"}")
		return
	}
	m.SetTwilioCallbacks(c)
	writeJSON(w, http.StatusOK, c)
}

// twilioStray delivers a signed callback about a SID the simulator never
// created to {"url"}: what a receiver hears of a message it did not send.
func (m *Main) twilioStray(w http.ResponseWriter, r *http.Request) {
	var in struct {
		URL string `json:"url"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10)).Decode(&in); err != nil || in.URL == "" {
		writeProblem(w, http.StatusBadRequest, "INVALID_REQUEST", "the body must be {\"url\"}")
		return
	}
	status := m.TwilioStrayCallback(in.URL)
	writeJSON(w, http.StatusOK, map[string]int{"status": status})
}

// TwilioStrayCallback posts a signed callback for an unknown SID to target
// and returns the receiver's status (0 when it could not be reached).
func (m *Main) TwilioStrayCallback(target string) int {
	m.twilio.mu.Lock()
	m.twilio.seq++
	msg := TwilioMessage{SID: fmt.Sprintf("SMstray%025d", m.twilio.seq), AccountSID: m.twilio.sid, To: "+15550000000", From: "+15550000001", Status: "delivered"}
	m.twilio.mu.Unlock()
	return m.twilioPost(target, msg)
}

// twilioDeliver sends the message (status "sent", with its date_sent, then
// "delivered") and posts a status callback for each status (each twice
// with Duplicate; none with Off), counted in the ledger.
func (m *Main) twilioDeliver(sid string, cb TwilioCallbacks) {
	for _, status := range []string{"sent", "delivered"} {
		m.twilio.mu.Lock()
		msg := m.twilio.messages[sid]
		now := m.cfg.Now()
		msg.Status, msg.DateUpdated = status, twilioTime(now)
		if status == "sent" {
			sent := twilioTime(now)
			msg.sent, msg.DateSent = now, &sent
		}
		c := *msg
		m.twilio.mu.Unlock()
		if c.StatusCallback == "" || cb.Off {
			continue
		}
		for range 1 + btoi(cb.Duplicate) {
			if m.twilioPost(c.StatusCallback, c) != 0 {
				m.twilio.mu.Lock()
				msg.Callbacks++
				m.twilio.mu.Unlock()
			}
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// twilioPost posts one signed status callback about msg to target.
func (m *Main) twilioPost(target string, msg TwilioMessage) int {
	form := url.Values{
		"MessageSid": {msg.SID}, "SmsSid": {msg.SID}, "AccountSid": {msg.AccountSID}, "From": {msg.From},
		"To": {msg.To}, "MessageStatus": {msg.Status}, "SmsStatus": {msg.Status}, "ApiVersion": {"2010-04-01"},
	}
	if msg.MessagingServiceSID != "" {
		form.Set("MessagingServiceSid", msg.MessagingServiceSID)
	}
	req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Twilio-Signature", TwilioSignature(m.twilio.token, target, form))
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TwilioSignature signs a callback as Twilio does: base64 of the
// HMAC-SHA1, keyed with the auth token, of the URL followed by every POST
// parameter sorted by name, each name then its value.
func TwilioSignature(token, target string, form url.Values) string {
	var b strings.Builder
	b.WriteString(target)
	for _, k := range slices.Sorted(maps.Keys(form)) {
		b.WriteString(k)
		b.WriteString(form.Get(k))
	}
	h := hmac.New(sha1.New, []byte(token))
	h.Write([]byte(b.String()))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}
