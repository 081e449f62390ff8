package api

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/telemetry"
)

// serverSpan makes the HTTP server span of every request (otelhttp, the
// stable HTTP conventions), continuing the trace of a platform's W3C
// traceparent when it sends one; once chi has routed the request the span
// is named by its route ("POST /v1/vapi/webhook"). Probes and /metrics
// are not traced. With tracing off (no provider installed) it costs a
// no-op span.
func serverSpan(next http.Handler) http.Handler {
	named := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		span := trace.SpanFromContext(r.Context())
		if !span.IsRecording() {
			return
		}
		if rc := chi.RouteContext(r.Context()); rc != nil {
			if route := rc.RoutePattern(); route != "" {
				span.SetName(r.Method + " " + route)
				span.SetAttributes(semconv.HTTPRoute(route))
			}
		}
	})
	return otelhttp.NewHandler(named, "oncecall", otelhttp.WithFilter(func(r *http.Request) bool {
		switch r.URL.Path {
		case "/livez", "/readyz", "/metrics":
			return false
		}
		return true
	}))
}

// errorType is a failure's class for a span's error.type: its fault code,
// never its message.
func errorType(err error) string {
	if err == nil {
		return ""
	}
	return string(fault.CodeOf(err))
}

// traceWrite runs a REST write's handler in its execute_tool span, named
// by the operation's tool (or the operation when it has none). A failure
// is the answer's HTTP status (error.type); a business rejection (422
// with an outcome) is an outcome, not a failure.
func traceWrite(o op.Operation, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, span := telemetry.StartTool(r.Context(), telemetry.Tool{Name: o.Tool(), Operation: o.Name()})
		if !span.IsRecording() {
			h(w, r)
			return
		}
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		h(ww, r.WithContext(ctx))
		info := infoFrom(ctx)
		done := telemetry.Done{ActionID: info.actionID, Outcome: info.outcome, Replay: info.replayed}
		if st := ww.Status(); st >= 400 && info.outcome == "" {
			done.ErrorType = strconv.Itoa(st)
		}
		telemetry.EndTool(span, done)
	}
}
