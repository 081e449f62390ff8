package api

import (
	"context"
	"errors"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall/internal/fault"
)

type ctxKey struct{ name string }

var (
	logKey  = ctxKey{"log"}
	infoKey = ctxKey{"info"}
)

// reqInfo collects what a request learns as it goes (tenant, action, key
// hash) for its one access-log line. Only identifiers: never bodies or
// customer data.
type reqInfo struct {
	attemptID string
	tenant    string
	actionID  string
	keyHash   string
	operation string
	outcome   string
	callID    string
	replayed  bool
}

func infoFrom(ctx context.Context) *reqInfo {
	if i, ok := ctx.Value(infoKey).(*reqInfo); ok {
		return i
	}
	return &reqInfo{}
}

func logFrom(ctx context.Context) *zerolog.Logger {
	if l, ok := ctx.Value(logKey).(*zerolog.Logger); ok {
		return l
	}
	nop := zerolog.Nop()
	return &nop
}

// accessLog gives every request an attempt id and a logger carrying it and
// the request id, and writes one line per request when it ends.
func accessLog(base zerolog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			info := &reqInfo{attemptID: uuid.NewString()}
			l := base.With().Str("request_id", middleware.GetReqID(r.Context())).Str("attempt_id", info.attemptID).Logger()
			ctx := context.WithValue(context.WithValue(r.Context(), logKey, &l), infoKey, info)
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r.WithContext(ctx))

			ev := l.Info()
			if ww.Status() >= 500 {
				ev = l.Warn()
			}
			route := chi.RouteContext(ctx).RoutePattern()
			ev = ev.Str("method", r.Method).Str("route", route).Int("status", ww.Status()).
				Dur("latency", time.Since(start)).Int("bytes", ww.BytesWritten())
			for _, f := range [][2]string{
				{"tenant_id", info.tenant}, {"action_id", info.actionID}, {"key_hash", info.keyHash},
				{"operation", info.operation}, {"outcome", info.outcome}, {"call_id", info.callID},
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
