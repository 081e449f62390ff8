package providersim

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Handler returns the simulator's HTTP handler.
func (m *Main) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", m.healthz)
	mux.HandleFunc("POST /{capability}/writes", m.postWrite)
	mux.HandleFunc("GET /{capability}/writes", m.getByRef)
	mux.HandleFunc("GET /ledger", m.getLedger)
	mux.HandleFunc("POST /control/faults", m.addFault)
	mux.HandleFunc("GET /control/faults", m.listFaults)
	mux.HandleFunc("DELETE /control/faults", m.clearFaults)
	mux.HandleFunc("DELETE /control/faults/{id}", m.deleteFault)
	m.stripeRoutes(mux)
	m.twilioRoutes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, http.StatusNotFound, "NO_ROUTE", "no such route")
	})
	return m.accessLog(m.auth(byKeyRoute(mux, m.getByKey)))
}

const byKeyPattern = "GET /{capability}/writes/by-key/{key}"

// byKeyRoute routes by-key lookups itself, from the escaped path: ServeMux
// would clean a key such as "a/../b" (sent as "a%2F..%2Fb") into another
// path and redirect.
func byKeyRoute(mux *http.ServeMux, getByKey http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(r.URL.EscapedPath(), "/")
		if r.Method == http.MethodGet && len(parts) == 5 && parts[0] == "" && parts[2] == "writes" && parts[3] == "by-key" {
			capability, err1 := url.PathUnescape(parts[1])
			key, err2 := url.PathUnescape(parts[4])
			if err1 != nil || err2 != nil {
				writeProblem(w, http.StatusBadRequest, "INVALID_REQUEST", "the path is not validly percent-encoded")
				return
			}
			if key != "" {
				r.Pattern = byKeyPattern
				r.SetPathValue("capability", capability)
				r.SetPathValue("key", key)
				getByKey(w, r)
				return
			}
		}
		mux.ServeHTTP(w, r)
	})
}

// problem is the body of every error answer.
type problem struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"code":"INTERNAL","message":"encode answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func writeProblem(w http.ResponseWriter, status int, code, msg string) {
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, status, problem{Code: code, Message: msg})
}

// auth requires the bearer token, when one is configured, everywhere but
// /healthz and the Twilio mode's API (Basic authentication, see twilio.go).
func (m *Main) auth(next http.Handler) http.Handler {
	want := []byte("Bearer " + m.cfg.AuthToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m.cfg.AuthToken != "" && r.URL.Path != "/healthz" && !strings.HasPrefix(r.URL.Path, "/2010-04-01/") &&
			subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			writeProblem(w, http.StatusUnauthorized, "UNAUTHORIZED", "missing or wrong bearer token")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// reqLog collects what one request did, for its access-log line.
type reqLog struct {
	capability, keyHash, id, outcome string
	faults                           []string
	replayed                         bool
}

type logKey struct{}

func logOf(r *http.Request) *reqLog {
	if l, ok := r.Context().Value(logKey{}).(*reqLog); ok {
		return l
	}
	return &reqLog{}
}

// statusWriter records the status; Unwrap lets http.ResponseController
// reach the connection to hijack it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// accessLog writes one line per request: route, status, latency, faults and
// identifiers (a hash of the key, never the key or the payload).
func (m *Main) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &reqLog{}
		sw := &statusWriter{ResponseWriter: w}
		r = r.WithContext(context.WithValue(r.Context(), logKey{}, info))
		next.ServeHTTP(sw, r)
		if r.URL.Path == "/healthz" {
			return
		}
		// The mux sets Pattern on the request it was handed.
		ev := m.cfg.Log.Info().Str("method", r.Method).Str("route", r.Pattern).Int("status", sw.status).
			Dur("latency", time.Since(start))
		for _, f := range [][2]string{
			{"capability", info.capability}, {"key_hash", info.keyHash}, {"id", info.id}, {"outcome", info.outcome},
		} {
			if f[1] != "" {
				ev = ev.Str(f[0], f[1])
			}
		}
		if len(info.faults) > 0 {
			ev = ev.Strs("faults", info.faults)
		}
		if info.replayed {
			ev = ev.Bool("replayed", true)
		}
		ev.Msg("request")
	})
}

func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:6])
}

// closeConn closes the request's connection without an answer.
func closeConn(w http.ResponseWriter, r *http.Request, outcome string) {
	logOf(r).outcome = outcome
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Not hijackable (HTTP/2): abort the stream instead.
		panic(http.ErrAbortHandler)
	}
	conn.Close()
}

// sleep waits d, or reports false when the simulator shuts down first.
func (m *Main) sleep(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-m.quit:
		return false
	}
}

// faultsFor merges the faults of the X-Sim-Fault header, the control rules
// and the configuration for one capability request.
func (m *Main) faultsFor(w http.ResponseWriter, r *http.Request, capability, kind string) (faults, bool) {
	f, err := parseFaults(r.Header.Get("X-Sim-Fault"))
	if err == nil {
		err = f.check(kind)
	}
	if err != nil {
		writeProblem(w, http.StatusBadRequest, "INVALID_FAULT", "X-Sim-Fault: "+err.Error())
		return faults{}, false
	}
	f = f.merge(m.rules.take(capability, kind))
	if m.cfg.LookupLag > 0 {
		f = f.merge(faults{lookupLag: m.cfg.LookupLag})
	}
	logOf(r).faults = f.names()
	return f, true
}

// capability reads and checks the {capability} path segment.
func capabilityOf(w http.ResponseWriter, r *http.Request) (string, bool) {
	c := r.PathValue("capability")
	if !isCapability(c) {
		writeProblem(w, http.StatusNotFound, "UNKNOWN_CAPABILITY", "capability must be one of "+capabilityList)
		return "", false
	}
	logOf(r).capability = c
	return c, true
}

func (m *Main) postWrite(w http.ResponseWriter, r *http.Request) {
	capability, ok := capabilityOf(w, r)
	if !ok {
		return
	}
	f, ok := m.faultsFor(w, r, capability, OnWrite)
	if !ok {
		return
	}
	if f.down {
		closeConn(w, r, "down")
		return
	}
	honourKeys := !m.cfg.NoIdempotency && !f.ignoreKeys
	req, msg := m.decodeWrite(w, r, capability, honourKeys)
	if msg != nil {
		writeJSON(w, statusOf(msg.Code), msg)
		return
	}
	honour := honourKeys && req.key != ""
	res, prior, err := m.st.claim(req, honour, m.cfg.Now(), m.cfg.KeyRetention)
	if err != nil {
		writeProblem(w, http.StatusInternalServerError, "LEDGER_UNAVAILABLE", "the ledger could not be written")
		return
	}
	switch res {
	case claimInFlight:
		logOf(r).outcome = "in_flight"
		writeProblem(w, http.StatusConflict, "IDEMPOTENCY_IN_PROGRESS", "a write with this key is being processed")
		return
	case claimMismatch:
		logOf(r).outcome = "key_reused"
		writeProblem(w, http.StatusBadRequest, "IDEMPOTENCY_KEY_REUSED",
			"this key was used for a different write (operation, external_ref or payload differ)")
		return
	}
	claimed := honour && res == claimNew
	// The write goes on even if the client gives up during the delay: a
	// provider that commits after the caller's timeout is the crash window.
	if !m.sleep(f.delay) {
		if res == claimNew {
			_ = m.st.release(req, claimed, m.cfg.Now())
		}
		writeProblem(w, http.StatusServiceUnavailable, "SHUTTING_DOWN", "the simulator is shutting down; nothing was written")
		return
	}
	if res == claimReplay {
		v := prior.at(m.cfg.Now())
		m.answer(w, r, &v, true, f)
		return
	}
	if f.failBefore {
		if err := m.st.release(req, claimed, m.cfg.Now()); err != nil {
			writeProblem(w, http.StatusInternalServerError, "LEDGER_UNAVAILABLE", "the ledger could not be written")
			return
		}
		logOf(r).outcome = "failed_before_commit"
		writeProblem(w, http.StatusServiceUnavailable, "SIMULATED_FAILURE", "simulated failure before commit; nothing was written")
		return
	}
	now := m.cfg.Now()
	wr, err := m.st.commit(req, claimed, f, now, f.lookupLag)
	if err != nil {
		// The event may or may not be on disk: as ambiguous as any 500.
		writeProblem(w, http.StatusInternalServerError, "LEDGER_UNAVAILABLE", "the ledger could not be written")
		return
	}
	m.answer(w, r, wr, false, f)
}

// answer sends a stored write, or the failure the faults ask for.
func (m *Main) answer(w http.ResponseWriter, r *http.Request, wr *Write, replayed bool, f faults) {
	info := logOf(r)
	info.id, info.replayed, info.outcome = wr.ID, replayed, wr.Status
	switch {
	case replayed && f.failBefore:
		writeProblem(w, http.StatusServiceUnavailable, "SIMULATED_FAILURE", "simulated failure; nothing was written")
		return
	case f.failAfter:
		writeProblem(w, http.StatusInternalServerError, "SIMULATED_FAILURE", "simulated failure after commit")
		return
	case f.drop:
		closeConn(w, r, wr.Status+"_dropped")
		return
	}
	status := http.StatusCreated
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
		status = http.StatusOK
	}
	switch wr.Status {
	case StatusRejected:
		status = http.StatusUnprocessableEntity
	case StatusPending:
		status = http.StatusAccepted
	}
	writeJSON(w, status, wr)
}

// writeBody is the body of POST /{capability}/writes.
type writeBody struct {
	ExternalRef string          `json:"external_ref"`
	Operation   string          `json:"operation"`
	Payload     json.RawMessage `json:"payload"`
}

// decodeWrite reads and validates a write request. The key is required when
// keys are honoured.
func (m *Main) decodeWrite(w http.ResponseWriter, r *http.Request, capability string, keyRequired bool) (writeRequest, *problem) {
	req := writeRequest{capability: capability, key: r.Header.Get("Idempotency-Key")}
	if req.key == "" && keyRequired {
		return req, &problem{"IDEMPOTENCY_KEY_MISSING", "Idempotency-Key is required"}
	}
	if req.key != "" {
		if err := validKey(req.key); err != nil {
			return req, &problem{"IDEMPOTENCY_KEY_INVALID", err.Error()}
		}
		logOf(r).keyHash = keyHash(req.key)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, m.cfg.MaxBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return req, &problem{"PAYLOAD_TOO_LARGE", fmt.Sprintf("the body exceeds %d bytes", m.cfg.MaxBodyBytes)}
		}
		return req, &problem{"INVALID_REQUEST", "the body could not be read"}
	}
	var b writeBody
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(&b); err != nil {
		return req, &problem{"INVALID_REQUEST", "the body must be a JSON object {external_ref, operation, payload}: " + err.Error()}
	}
	if d.More() {
		return req, &problem{"INVALID_REQUEST", "the body must hold one JSON object"}
	}
	switch {
	case b.ExternalRef == "" || len(b.ExternalRef) > 255:
		return req, &problem{"INVALID_REQUEST", "external_ref is required (1 to 255 bytes)"}
	case b.Operation == "" || len(b.Operation) > 100:
		return req, &problem{"INVALID_REQUEST", "operation is required (1 to 100 bytes)"}
	}
	payload := []byte(b.Payload)
	if len(payload) == 0 || string(payload) == "null" {
		payload = []byte("{}")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, payload); err != nil {
		return req, &problem{"INVALID_REQUEST", "payload is not valid JSON"}
	}
	if err := decodeNumbers(compact.Bytes(), &req.fields); err != nil || req.fields == nil {
		return req, &problem{"INVALID_REQUEST", "payload must be a JSON object"}
	}
	req.externalRef, req.operation, req.payload = b.ExternalRef, b.Operation, compact.Bytes()
	return req, nil
}

func statusOf(code string) int {
	if code == "PAYLOAD_TOO_LARGE" {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

// validKey accepts 1 to 255 characters of printable ASCII.
func validKey(key string) error {
	if len(key) > 255 {
		return errors.New("Idempotency-Key must be at most 255 characters")
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return errors.New("Idempotency-Key must be printable ASCII")
		}
	}
	return nil
}

// lookup runs the faults of a lookup request; false means it was answered.
func (m *Main) lookup(w http.ResponseWriter, r *http.Request) (string, faults, bool) {
	capability, ok := capabilityOf(w, r)
	if !ok {
		return "", faults{}, false
	}
	f, ok := m.faultsFor(w, r, capability, OnLookup)
	if !ok {
		return "", faults{}, false
	}
	switch {
	case f.down:
		closeConn(w, r, "down")
		return "", faults{}, false
	case !m.sleep(f.delay):
		writeProblem(w, http.StatusServiceUnavailable, "SHUTTING_DOWN", "the simulator is shutting down")
		return "", faults{}, false
	case f.failBefore:
		writeProblem(w, http.StatusServiceUnavailable, "SIMULATED_FAILURE", "simulated lookup failure")
		return "", faults{}, false
	}
	return capability, f, true
}

// answerLookup sends a lookup's answer, or the failure the faults ask for.
func answerLookup(w http.ResponseWriter, r *http.Request, f faults, status int, v any) {
	switch {
	case f.failAfter:
		writeProblem(w, http.StatusInternalServerError, "SIMULATED_FAILURE", "simulated lookup failure")
	case f.drop:
		closeConn(w, r, "dropped")
	default:
		writeJSON(w, status, v)
	}
}

func (m *Main) getByKey(w http.ResponseWriter, r *http.Request) {
	capability, f, ok := m.lookup(w, r)
	if !ok {
		return
	}
	key := r.PathValue("key")
	logOf(r).keyHash = keyHash(key)
	wr := m.st.lookupKey(capKey{capability, key}, m.cfg.Now(), f.lookupLag, m.cfg.KeyRetention)
	if wr == nil {
		logOf(r).outcome = "not_found"
		answerLookup(w, r, f, http.StatusNotFound, problem{"NOT_FOUND", "no write with this key is visible"})
		return
	}
	logOf(r).id, logOf(r).outcome = wr.ID, wr.Status
	answerLookup(w, r, f, http.StatusOK, wr)
}

// writeList is the body of list answers.
type writeList[T any] struct {
	Writes []T `json:"writes"`
}

func (m *Main) getByRef(w http.ResponseWriter, r *http.Request) {
	capability, f, ok := m.lookup(w, r)
	if !ok {
		return
	}
	ref := r.URL.Query().Get("external_ref")
	if ref == "" {
		writeProblem(w, http.StatusBadRequest, "INVALID_REQUEST", "the external_ref query parameter is required")
		return
	}
	writes := m.st.lookupRef(capRef{capability, ref}, m.cfg.Now(), f.lookupLag)
	logOf(r).outcome = strconv.Itoa(len(writes)) + "_found"
	answerLookup(w, r, f, http.StatusOK, writeList[Write]{writes})
}

func (m *Main) getLedger(w http.ResponseWriter, r *http.Request) {
	c := r.URL.Query().Get("capability")
	if c != "" && !isCapability(c) {
		writeProblem(w, http.StatusBadRequest, "UNKNOWN_CAPABILITY", "capability must be one of "+capabilityList)
		return
	}
	writeJSON(w, http.StatusOK, writeList[LedgerEntry]{m.st.ledger(c, m.cfg.Now())})
}

func (m *Main) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"status":        "ok",
		"capabilities":  []string{Calendar, Payments, Messaging, CRM},
		"idempotency":   !m.cfg.NoIdempotency,
		"key_retention": m.cfg.KeyRetention.String(),
		"lookup_lag":    m.cfg.LookupLag.String(),
		"in_flight":     m.st.inFlight() + m.stripe.inFlight() + m.twilio.inFlight(),
	})
}

func (m *Main) addFault(w http.ResponseWriter, r *http.Request) {
	var in Rule
	d := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	d.DisallowUnknownFields()
	if err := d.Decode(&in); err != nil {
		writeProblem(w, http.StatusBadRequest, "INVALID_REQUEST", "the body must be {capability, fault, count, probability, on}: "+err.Error())
		return
	}
	rule, err := m.rules.add(in)
	if err != nil {
		writeProblem(w, http.StatusBadRequest, "INVALID_FAULT", err.Error())
		return
	}
	m.cfg.Log.Info().Int64("rule", rule.ID).Str("capability", rule.Capability).Str("fault", rule.Fault).
		Int("count", rule.Count).Str("on", rule.On).Msg("fault set")
	writeJSON(w, http.StatusCreated, rule)
}

func (m *Main) listFaults(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Faults []Rule `json:"faults"`
	}{m.rules.all()})
}

func (m *Main) clearFaults(w http.ResponseWriter, r *http.Request) {
	m.rules.remove(0)
	w.WriteHeader(http.StatusNoContent)
}

func (m *Main) deleteFault(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 || !m.rules.remove(id) {
		writeProblem(w, http.StatusNotFound, "NO_SUCH_FAULT", "no fault rule with this id")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
