package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// ContextLen is the length of a stored trace context: the trace id (16
// bytes), the span id (8) and the trace flags (1), W3C traceparent's
// fields in binary.
const ContextLen = 16 + 8 + 1

// Keep returns the span context of ctx in ContextLen bytes, to be kept
// with an action, when it is sampled; nil otherwise (tracing off or the
// request not sampled), so that an untraced action stores nothing.
func Keep(ctx context.Context) []byte {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || !sc.IsSampled() {
		return nil
	}
	b := make([]byte, 0, ContextLen)
	tid, sid := sc.TraceID(), sc.SpanID()
	b = append(b, tid[:]...)
	b = append(b, sid[:]...)
	return append(b, byte(sc.TraceFlags()))
}

// Kept reads what Keep returned; false for anything else (nil included).
func Kept(b []byte) (trace.SpanContext, bool) {
	if len(b) != ContextLen {
		return trace.SpanContext{}, false
	}
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], b[:16])
	copy(sid[:], b[16:24])
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(b[24]), Remote: true,
	})
	return sc, sc.IsValid()
}

// TraceID is the hex trace id of a stored trace context; empty when b
// holds none.
func TraceID(b []byte) string {
	sc, ok := Kept(b)
	if !ok {
		return ""
	}
	return sc.TraceID().String()
}
