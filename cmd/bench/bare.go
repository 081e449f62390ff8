package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/booking"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/wire"
)

// The bare handler is the baseline a booking costs without idempotency. It
// runs on the server's stack (net/http, chi, a request id, one zerolog access
// line per request, a recoverer, the body limit, Bearer auth answered from
// memory like the server's key cache on a hit, the same strict JSON decoding
// and normalisation) and then does only the business write: one autocommit
// INSERT of the appointment. No claim, no fingerprint, no stored answer.

// keyMap maps API key hashes to tenants, like the server's key cache.
type keyMap struct {
	mu sync.Mutex
	m  map[[32]byte]uuid.UUID
}

func newKeyMap() *keyMap { return &keyMap{m: map[[32]byte]uuid.UUID{}} }

func (k *keyMap) add(key string, tenant uuid.UUID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.m[sha256.Sum256([]byte(key))] = tenant
}

func (k *keyMap) get(key string) (uuid.UUID, bool) {
	h := sha256.Sum256([]byte(key))
	k.mu.Lock()
	defer k.mu.Unlock()
	t, ok := k.m[h]
	return t, ok
}

type bareTenant struct{}

func newBare(store *db.Store, keys *keyMap, log zerolog.Logger) http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.RequestID, bareLog(log), middleware.Recoverer)
	r.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
			scheme, key, _ := strings.Cut(r.Header.Get("Authorization"), " ")
			tenant, ok := keys.get(strings.TrimSpace(key))
			if !strings.EqualFold(scheme, "Bearer") || !ok {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), bareTenant{}, tenant)))
		})
	})
	// The floor: the same request, read, decoded and checked, answered with
	// a body of a booking answer's size and no database work at all.
	r.Post("/v1/floor", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := bareInput(w, r); !ok {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write(floorBody) //nolint:errcheck
	})
	// The statement: the request answered by the one statement a first
	// execution sends (ceiling's), keyed by its Idempotency-Key, and its
	// stored answer written back in an envelope of the server's shape: a
	// first execution without oncecall's own code around the statement.
	r.Post(statementPath, func(w http.ResponseWriter, r *http.Request) {
		in, ok := bareInput(w, r)
		if !ok {
			return
		}
		tenant := r.Context().Value(bareTenant{}).(uuid.UUID)
		a, err := claimBooking(r.Context(), store, tenant, r.Header.Get("Idempotency-Key"), op.MustUUID(in.CustomerID), op.MustUUID(in.SlotID))
		if err != nil {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		id := a.ID.String()
		out := make([]byte, 0, 192+len(a.Result))
		out = append(out, `{"action_id":"`...)
		out = append(out, id...)
		out = append(out, `","operation":"appointment.book","outcome":"confirmed","state":"completed","result":`...)
		out = append(out, a.Result...)
		out = append(out, `,"reason":null,"status_url":"/v1/actions/`...)
		out = append(out, id...)
		out = append(out, `"}`...)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.Status)
		w.Write(out) //nolint:errcheck
	})
	// The peer: idempotency written by hand on this same stack (peer.go).
	r.Post(peerPath, peerHandler(store.Pool()))
	r.Post("/v1/appointments", func(w http.ResponseWriter, r *http.Request) {
		in, ok := bareInput(w, r)
		if !ok {
			return
		}
		tenant := r.Context().Value(bareTenant{}).(uuid.UUID)
		a, booked, err := bareBook(r.Context(), store, tenant, op.MustUUID(in.CustomerID), op.MustUUID(in.SlotID), in.Service)
		switch {
		case err != nil:
			http.Error(w, "internal error", http.StatusInternalServerError)
		case booked != db.BookedOK:
			http.Error(w, "slot unavailable", http.StatusUnprocessableEntity)
		default:
			out, _ := json.Marshal(wire.FromAppointment(a))
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			w.Write(out) //nolint:errcheck
		}
	})
	return r
}

// bareBook is the bare handler's one statement: the booking's INSERT,
// without idempotency. The bare_sql scenario sends it without HTTP.
func bareBook(ctx context.Context, store *db.Store, tenant, customer, slot uuid.UUID, service string) (oncecall.Appointment, db.Booked, error) {
	// appointments.action_id is NOT NULL; without idempotency there is no
	// action, so a random reference stands in for it.
	return store.BookSlot(ctx, db.Booking{
		TenantID: tenant, ActionID: uuid.New(), CustomerID: customer, SlotID: slot, Service: service,
	})
}

// floorBody is what the floor answers: a first booking's answer as the
// server writes it (api's envelope around an appointment).
var floorBody = []byte(`{"action_id":"0197a3b0-0000-7000-8000-000000000003","operation":"appointment.book",` +
	`"outcome":"confirmed","state":"completed","result":` + string(resultBody) +
	`,"reason":null,"status_url":"/v1/actions/0197a3b0-0000-7000-8000-000000000003"}`)

// bareInput reads and checks a booking's body as the server does; false
// means the error has been answered.
func bareInput(w http.ResponseWriter, r *http.Request) (booking.BookInput, bool) {
	var in booking.BookInput
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		http.Error(w, "content type", http.StatusUnsupportedMediaType)
		return in, false
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "body", http.StatusRequestEntityTooLarge)
		return in, false
	}
	if err := op.Decode(body, &in); err != nil {
		http.Error(w, "invalid input", http.StatusBadRequest)
		return in, false
	}
	if err := op.First(op.ID("customer_id", &in.CustomerID), op.ID("slot_id", &in.SlotID),
		op.Text("service", &in.Service, 200, false)); err != nil {
		http.Error(w, "invalid input", http.StatusBadRequest)
		return in, false
	}
	return in, true
}

// bareLog writes one access line per request with the server's fields.
func bareLog(base zerolog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			l := base.With().Str("request_id", middleware.GetReqID(r.Context())).Str("attempt_id", uuid.NewString()).Logger()
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r)
			l.Info().Str("method", r.Method).Str("route", chi.RouteContext(r.Context()).RoutePattern()).
				Int("status", ww.Status()).Dur("latency", time.Since(start)).Int("bytes", ww.BytesWritten()).
				Msg("request")
		})
	}
}
