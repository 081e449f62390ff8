package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// startTracing installs the OpenTelemetry tracer provider that the
// standard OTEL_* environment describes (docs/observability.md). Tracing
// is off, and nothing is installed, unless an OTLP endpoint is set
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); it
// is off whatever else is set when OTEL_SDK_DISABLED is true or
// OTEL_TRACES_EXPORTER is none. The exporter (OTEL_EXPORTER_OTLP_PROTOCOL:
// http/protobuf by default, or grpc), the sampler (OTEL_TRACES_SAMPLER,
// parentbased_always_on by default), the batching (OTEL_BSP_*) and the
// resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES; service.name
// oncecall and service.version by default) are the SDK's, read from the
// environment. A request's W3C traceparent is honoured. stop flushes the
// spans still buffered.
func startTracing(ctx context.Context, getenv func(string) string, log zerolog.Logger) (stop func(context.Context) error, err error) {
	stop = func(context.Context) error { return nil }
	if on, err := tracingOn(getenv); !on || err != nil {
		return stop, err
	}
	var exp sdktrace.SpanExporter
	switch protocol := first(getenv, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"); protocol {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return stop, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: oncecall exports traces with http/protobuf (the default) or grpc", protocol)
	}
	if err != nil {
		return stop, fmt.Errorf("start the OTLP trace exporter: %w", err)
	}
	version, rev, _ := buildVersion(commit)
	if version == "(devel)" && rev != "unknown" {
		version = rev
	}
	// The environment's service name and attributes override the defaults.
	res, err := resource.Merge(
		resource.NewSchemaless(semconv.ServiceName("oncecall"), semconv.ServiceVersion(version)),
		resource.Environment(),
	)
	if err == nil {
		res, err = resource.Merge(resource.Default(), res)
	}
	if err != nil {
		return stop, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn().Err(err).Msg("tracing")
	}))
	log.Info().Str("service_version", version).Msg("tracing on: exporting spans over OTLP")
	return tp.Shutdown, nil
}

// tracingOn reads whether the environment asks for traces.
func tracingOn(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	switch exporter := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exporter {
	case "", "otlp":
	case "none":
		return false, nil
	default:
		return false, errors.New("OTEL_TRACES_EXPORTER " + exporter + ": oncecall exports traces with otlp, or none")
	}
	return first(getenv, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT") != "", nil
}

// first is the first of the variables that is set.
func first(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(getenv(n)); v != "" {
			return v
		}
	}
	return ""
}

// flushTraces sends the spans still buffered when the program stops,
// within a few seconds.
func flushTraces(ctx context.Context, stop func(context.Context) error, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := stop(ctx); err != nil {
		log.Warn().Err(err).Msg("flush traces")
	}
}
