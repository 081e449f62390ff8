package metrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/oncecall/oncecall/internal/metrics"
)

// A latency observed in a sampled trace carries the trace id as its
// exemplar, served in the OpenMetrics format; an unsampled one carries
// none.
func TestLatenciesCarryTraceExemplars(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{})
	traceID, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	spanID, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sampled := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled,
	}))
	m.Request(sampled, "/v1/vapi/webhook", http.MethodPost, 200, 30*time.Millisecond)
	m.ProviderCall(sampled, "calendar", 2*time.Second)
	m.Request(context.Background(), "/v1/appointments", http.MethodPost, 201, 40*time.Millisecond)

	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, req)
	body, _ := io.ReadAll(w.Body)
	exemplar := `# {trace_id="4bf92f3577b34da6a3ce929d0e0e4736"}`
	for _, metric := range []string{`oncecall_http_request_duration_seconds_bucket{route="/v1/vapi/webhook",le="0.05"}`,
		`oncecall_provider_call_duration_seconds_bucket{capability="calendar",le="2.5"}`} {
		if !hasLine(string(body), metric, exemplar) {
			t.Errorf("no exemplar %s on %s:\n%s", exemplar, metric, body)
		}
	}
	if hasLine(string(body), `oncecall_http_request_duration_seconds_bucket{route="/v1/appointments"`, "trace_id") {
		t.Errorf("an unsampled request's latency carries an exemplar")
	}
}

func hasLine(body, prefix, part string) bool {
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix) && strings.Contains(l, part) {
			return true
		}
	}
	return false
}
