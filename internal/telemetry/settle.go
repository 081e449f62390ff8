package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// LinkKindKey says why a span links another: the reconciler's span links
// the request that left its action unsettled.
const LinkKindKey = attribute.Key("oncecall.link")

// StartSettle starts the span of a background run over one action (the
// reconciler's): a trace of its own, minutes after the request, linked to
// the request's span that left the action unsettled when the action kept
// its trace context (kept, see Keep). The span links the request, not
// parents under it: the request's trace ended with its answer.
func StartSettle(ctx context.Context, name, actionID, operation string, kept []byte) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{
		trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(ActionIDKey.String(actionID), OperationKey.String(operation)),
	}
	if sc, ok := Kept(kept); ok {
		opts = append(opts, trace.WithLinks(trace.Link{
			SpanContext: sc, Attributes: []attribute.KeyValue{LinkKindKey.String("unsettled_by")},
		}))
	}
	return Tracer().Start(ctx, name+" "+operation, opts...)
}

// EndSettle records what the run came to (completed, still unknown,
// needs_operator, error) and ends the span.
func EndSettle(span trace.Span, outcome, result, errorType string) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(ResultKey.String(result))
	if outcome != "" {
		span.SetAttributes(OutcomeKey.String(outcome))
	}
	if errorType != "" {
		span.SetAttributes(semconv.ErrorTypeKey.String(errorType))
		span.SetStatus(codes.Error, errorType)
	}
	span.End()
}

// StartStep starts the INTERNAL span of one send or lookup of a remote
// step (verb "send" or "lookup"), the parent of the provider's CLIENT
// spans; resend counts the step's earlier sends, and is what those spans
// carry as http.request.resend_count.
func StartStep(ctx context.Context, verb, step, capability string, resend int) (context.Context, trace.Span) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return ctx, span
	}
	attrs := []attribute.KeyValue{StepKey.String(step), attribute.String("oncecall.capability", capability)}
	if verb == "send" {
		attrs = append(attrs, semconv.HTTPRequestResendCount(resend))
	}
	ctx, span = Tracer().Start(ctx, verb+" "+step, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return WithResend(ctx, resend), span
}

// EndStep records a send's or lookup's result class (succeeded,
// rejected, ambiguous, not_sent, found, not_found, ...) and ends the span.
func EndStep(span trace.Span, result string, failed bool) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(ResultKey.String(result))
	if failed {
		span.SetAttributes(semconv.ErrorTypeKey.String(result))
		span.SetStatus(codes.Error, result)
	}
	span.End()
}
