// Package telemetry holds oncecall's traces: the spans of tool calls and
// REST writes (execute_tool), of the database (a pgx tracer) and of
// provider requests (an HTTP transport), and the trace context an action
// keeps so that the reconciler's work can be linked to the request that
// left it unsettled. Spans go to the OpenTelemetry tracer provider that
// cmd/oncecall installs from the OTEL_* environment (otel's global one: a
// no-op one until then, so spans cost next to nothing when tracing is
// off). No attribute carries what a caller said or will hear: arguments,
// results, say, names, phones and e-mails are never recorded.
package telemetry

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName names oncecall's instrumentation scope.
const ScopeName = "github.com/oncecall/oncecall"

// oncecall's own attributes.
const (
	ActionIDKey  = attribute.Key("oncecall.action_id")
	OutcomeKey   = attribute.Key("oncecall.outcome")
	ReplayKey    = attribute.Key("oncecall.replay")
	OperationKey = attribute.Key("oncecall.operation")
	PlatformKey  = attribute.Key("oncecall.platform")
	StepKey      = attribute.Key("oncecall.step")
	ResultKey    = attribute.Key("oncecall.result")
)

// Tracer is oncecall's tracer from the installed provider.
func Tracer() trace.Tracer { return otel.Tracer(ScopeName) }

// Tool describes one tool call or REST write.
type Tool struct {
	// Name is the tool's name (book_appointment); a REST write without a
	// tool is named by its operation.
	Name, Operation string
	// Platform is the voice platform (empty for REST), CallID the
	// platform's id of the call (gen_ai.conversation.id) and ToolCallID
	// its id of this invocation, when it sends one (Vapi).
	Platform, CallID, ToolCallID string
}

// StartTool starts the INTERNAL execute_tool span of a tool call or REST
// write, the parent of the claim's and the providers' spans.
func StartTool(ctx context.Context, t Tool) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		// Not sampled: nothing below is recorded either.
		return ctx, trace.SpanFromContext(ctx)
	}
	name := t.Name
	if name == "" {
		name = t.Operation
	}
	attrs := make([]attribute.KeyValue, 0, 7)
	attrs = append(attrs, semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(name),
		semconv.GenAIToolType("function"), OperationKey.String(t.Operation))
	if t.Platform != "" {
		attrs = append(attrs, PlatformKey.String(t.Platform))
	}
	if t.CallID != "" {
		attrs = append(attrs, semconv.GenAIConversationID(t.CallID))
	}
	if t.ToolCallID != "" {
		attrs = append(attrs, semconv.GenAIToolCallID(t.ToolCallID))
	}
	return Tracer().Start(ctx, "execute_tool "+name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
}

// Done is what a tool call or REST write came to.
type Done struct {
	ActionID string
	// Outcome is confirmed, rejected or pending; empty when there was no
	// action (bad input, a failure).
	Outcome string
	Replay  bool
	// ErrorType is the low-cardinality class of a failure (a fault code
	// such as SERVICE_UNAVAILABLE or invalid_arguments); empty on success.
	// Never an error's text, which may quote input.
	ErrorType string
}

// EndTool records d on the execute_tool span and ends it.
func EndTool(span trace.Span, d Done) {
	if !span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 4)
	if d.ActionID != "" {
		attrs = append(attrs, ActionIDKey.String(d.ActionID))
	}
	if d.Outcome != "" {
		attrs = append(attrs, OutcomeKey.String(d.Outcome))
	}
	attrs = append(attrs, ReplayKey.Bool(d.Replay))
	if d.ErrorType != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(d.ErrorType))
		span.SetStatus(codes.Error, d.ErrorType)
	}
	span.SetAttributes(attrs...)
	span.End()
}

// Pending records, on the span of ctx, that the answer is pending because
// the request's time ran out (a voice call's budget, a caller's deadline)
// while the steps named still wait for their providers.
func Pending(ctx context.Context, reason string, steps ...string) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{attribute.String("oncecall.pending.reason", reason)}
	if len(steps) > 0 {
		attrs = append(attrs, attribute.StringSlice("oncecall.pending.steps", steps))
	}
	if deadline, ok := ctx.Deadline(); ok {
		attrs = append(attrs, attribute.String("oncecall.deadline", deadline.UTC().Format("2006-01-02T15:04:05.000Z07:00")))
	}
	span.AddEvent("oncecall.answer.pending", trace.WithAttributes(attrs...))
}
