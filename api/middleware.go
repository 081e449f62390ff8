package api

import (
	"context"
	"errors"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/metrics"
)

// ctxKey names a request's context value. The keys are pointers: a
// pointer goes into ctx.Value's interface as it is, where a struct would be
// copied to the heap on every lookup.
type ctxKey struct{ name string }

var infoKey = &ctxKey{"info"}

// reqInfo collects what a request learns as it goes (tenant, action, key
// hash) for its one access-log line, and holds the request's logger. Only
// identifiers: never bodies or customer data.
type reqInfo struct {
	attemptID string
	requestID string
	tenant    string
	actionID  string
	keyHash   string
	operation string
	outcome   string
	// callPlatform and callID are a voice call's platform and its id of
	// the call.
	callPlatform string
	callID       string
	replayed     bool
	// seat is the request's place in its tenant's share of the pool.
	seat seat

	// base is the server's logger; log, base with the request's ids, is
	// made the first time something of the request logs (most requests
	// write only their access line, which adds the ids itself).
	base    zerolog.Logger
	logOnce sync.Once
	log     zerolog.Logger
}

func infoFrom(ctx context.Context) *reqInfo {
	if i, ok := ctx.Value(infoKey).(*reqInfo); ok {
		return i
	}
	return &reqInfo{}
}

// logFrom is the request's logger: the server's, with the request id and
// the attempt id.
func logFrom(ctx context.Context) *zerolog.Logger {
	i, ok := ctx.Value(infoKey).(*reqInfo)
	if !ok {
		nop := zerolog.Nop()
		return &nop
	}
	i.logOnce.Do(func() {
		i.log = i.base.With().Str("request_id", i.requestID).Str("attempt_id", i.attemptID).Logger()
	})
	return &i.log
}

// accessLog gives every request an attempt id and a logger carrying it and
// the request id, and when the request ends writes its one access-log line
// and, with m, counts it (route, method, status, latency). It sits outside
// the recoverer, so a panic is logged and counted as the 500 it became.
func accessLog(base zerolog.Logger, m *metrics.Metrics) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			info := &reqInfo{attemptID: uuid.NewString(), requestID: middleware.GetReqID(r.Context()), base: base}
			ctx := context.WithValue(r.Context(), infoKey, info)
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r.WithContext(ctx))

			took := time.Since(start)
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK // the handler wrote nothing: net/http answers 200
			}
			route := chi.RouteContext(ctx).RoutePattern()
			if m != nil {
				m.Request(ctx, route, r.Method, status, took)
			}
			ev := base.Info()
			if status >= 500 {
				ev = base.Warn()
			}
			ev = ev.Str("request_id", info.requestID).Str("attempt_id", info.attemptID).
				Str("method", r.Method).Str("route", route).Int("status", status).
				Dur("latency", took).Int("bytes", ww.BytesWritten())
			for _, f := range [][2]string{
				{"tenant_id", info.tenant}, {"action_id", info.actionID}, {"key_hash", info.keyHash},
				{"operation", info.operation}, {"outcome", info.outcome},
				{"call_platform", info.callPlatform}, {"call_id", info.callID},
			} {
				if f[1] != "" {
					ev = ev.Str(f[0], f[1])
				}
			}
			if info.replayed {
				ev = ev.Bool("replayed", true)
			}
			ev.Msg("request")
		})
	}
}

// recoverer turns a panic into a 500 problem and logs it.
func recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				logFrom(r.Context()).Error().Interface("panic", v).Bytes("stack", debug.Stack()).Msg("panic")
				writeError(w, r, errors.New("panic"))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// requireJSON rejects a body that declares a content type other than JSON.
func requireJSON(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	if mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")) {
		return nil
	}
	return fault.New(fault.UnsupportedMedia, "Content-Type must be application/json")
}
