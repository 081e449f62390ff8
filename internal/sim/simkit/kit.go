package simkit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// FaultHeader sets faults for one request.
const FaultHeader = "X-Sim-Fault"

// Kit is the part of a simulator that is the same for every provider: its
// faults and the way a request meets them.
type Kit struct {
	Rules Rules
	// LookupLag hides every write from reads for this long (plus a
	// request's own lookup_lag).
	LookupLag time.Duration
	// Error writes the provider's own error answer.
	Error func(w http.ResponseWriter, status int, code, message string)
	Log   zerolog.Logger
	// Done is closed at shutdown: delays end early.
	Done <-chan struct{}
	// Notes sends the fake's change notifications.
	Notes Notifier
	// delayed counts the writes waiting out a delay, which they do before
	// their work (GET /sim/healthz tells it: a test that kills the client
	// meanwhile knows the write reached the provider).
	delayed atomic.Int64
}

// Begin starts a request of kind (OnWrite or OnRead): it reads the faults
// that apply and acts on those that come before any work (down, delay,
// fail_before_commit). It returns false when the request is answered.
func (k *Kit) Begin(w http.ResponseWriter, r *http.Request, kind string) (Faults, bool) {
	f, err := ParseFaults(r.Header.Get(FaultHeader))
	if err != nil {
		k.Error(w, http.StatusBadRequest, "INVALID_FAULT", err.Error())
		return Faults{}, false
	}
	f = f.merge(k.Rules.Take(kind))
	f.LookupLag = max(f.LookupLag, k.LookupLag)
	if names := f.Names(); len(names) > 0 {
		k.Log.Info().Str("route", r.Method+" "+r.URL.Path).Strs("faults", names).Msg("faults")
	}
	if f.Down {
		hangUp(w)
		return f, false
	}
	if f.Delay > 0 {
		if kind == OnWrite {
			k.delayed.Add(1)
			defer k.delayed.Add(-1)
		}
		select {
		case <-time.After(f.Delay):
		case <-k.Done:
			k.Error(w, http.StatusServiceUnavailable, "SHUTTING_DOWN", "the simulator is shutting down")
			return f, false
		}
	}
	if f.FailBefore {
		k.Error(w, http.StatusServiceUnavailable, "SIMULATED_FAILURE", "simulated failure before commit")
		return f, false
	}
	return f, true
}

// Answer answers a request whose work is done (committed): the answer is
// dropped, replaced by a 500, or written as status and body.
func (k *Kit) Answer(w http.ResponseWriter, f Faults, status int, body any) {
	switch {
	case f.Drop:
		hangUp(w)
	case f.FailAfter:
		k.Error(w, http.StatusInternalServerError, "SIMULATED_FAILURE", "simulated failure after commit")
	case body == nil:
		w.WriteHeader(status)
	default:
		WriteJSON(w, status, body)
	}
}

// Visible reports whether a write made at created is visible to a read
// with faults f at now.
func (f Faults) Visible(created, now time.Time) bool { return !now.Before(created.Add(f.LookupLag)) }

// hangUp closes the connection without an answer.
func hangUp(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// WriteJSON writes v as the JSON answer.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encode answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// ControlRoutes serves the fault rules: POST /sim/faults (a Rule), GET
// /sim/faults, DELETE /sim/faults and /sim/faults/{id}.
func (k *Kit) ControlRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /sim/faults", func(w http.ResponseWriter, r *http.Request) {
		var rule Rule
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rule); err != nil {
			WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "the rule cannot be read: " + err.Error()})
			return
		}
		added, err := k.Rules.Add(rule)
		if err != nil {
			WriteJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		WriteJSON(w, http.StatusCreated, added)
	})
	mux.HandleFunc("GET /sim/faults", func(w http.ResponseWriter, _ *http.Request) {
		WriteJSON(w, http.StatusOK, map[string][]Rule{"faults": k.Rules.All()})
	})
	mux.HandleFunc("DELETE /sim/faults", func(w http.ResponseWriter, _ *http.Request) {
		k.Rules.Remove(0)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("DELETE /sim/faults/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
		if err != nil || id <= 0 || !k.Rules.Remove(id) {
			WriteJSON(w, http.StatusNotFound, map[string]string{"error": "no such rule"})
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /sim/notifications", func(w http.ResponseWriter, _ *http.Request) {
		sent, sending := k.Notes.Deliveries()
		WriteJSON(w, http.StatusOK, map[string]any{"notifications": sent, "sending": sending})
	})
	mux.HandleFunc("POST /sim/notifications/hold", func(w http.ResponseWriter, _ *http.Request) {
		k.Notes.Hold()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /sim/notifications/release", func(w http.ResponseWriter, _ *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]int{"released": k.Notes.Release()})
	})
	mux.HandleFunc("GET /sim/healthz", func(w http.ResponseWriter, _ *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]any{"status": "ok", "writes_delayed": k.delayed.Load()})
	})
}

// Serve listens on addr, logs {"message":"listening","addr":...} (the
// chosen port with :0), and serves h until ctx ends, then drains.
func Serve(ctx context.Context, addr string, h http.Handler, log zerolog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: accessLog(h, log), ReadHeaderTimeout: 10 * time.Second}
	log.Info().Str("addr", ln.Addr().String()).Msg("listening")
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// accessLog logs each request's route, status and latency (never bodies:
// they hold customers' names).
func accessLog(h http.Handler, log zerolog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		log.Debug().Str("method", r.Method).Str("path", r.URL.Path).Int("status", sw.status).
			Dur("took", time.Since(start)).Msg("request")
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController (and Hijack) reach the connection.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Hijack hands the connection over (drop_response, down).
func (s *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(s.ResponseWriter).Hijack()
}
