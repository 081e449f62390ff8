package telemetry

import (
	"context"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Transport wraps base (http.DefaultTransport when nil) so that every
// request to a provider is a CLIENT span (otelhttp, stable HTTP
// conventions) carrying W3C traceparent, and http.request.resend_count
// when the request re-sends a step (WithResend). The URL is recorded
// without its query, which can name a recipient (a lookup by phone). A
// request made outside a sampled span (a token refresh, tracing off) is
// sent as it is: no span of its own, no trace of its own.
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return traced{otel: otelhttp.NewTransport(annotate{base}), base: base}
}

type traced struct{ otel, base http.RoundTripper }

func (t traced) RoundTrip(r *http.Request) (*http.Response, error) {
	if !trace.SpanFromContext(r.Context()).IsRecording() {
		return t.base.RoundTrip(r)
	}
	return t.otel.RoundTrip(r)
}

type resendKey struct{}

// WithResend marks the requests made with ctx as the n-th re-send of the
// same write (0: the first send).
func WithResend(ctx context.Context, n int) context.Context {
	if n <= 0 || !trace.SpanFromContext(ctx).IsRecording() {
		return ctx
	}
	return context.WithValue(ctx, resendKey{}, n)
}

// annotate runs inside otelhttp's span: it corrects what the span says of
// the request before sending it.
type annotate struct{ next http.RoundTripper }

func (a annotate) RoundTrip(r *http.Request) (*http.Response, error) {
	if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
		u := *r.URL
		u.RawQuery, u.ForceQuery, u.Fragment, u.User = "", false, "", nil
		span.SetAttributes(semconv.URLFull(u.String()))
		if n, ok := r.Context().Value(resendKey{}).(int); ok {
			span.SetAttributes(semconv.HTTPRequestResendCount(n))
		}
	}
	return a.next.RoundTrip(r)
}
