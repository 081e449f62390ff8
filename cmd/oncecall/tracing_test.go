package main

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestTracingFollowsTheOTELEnvironment(t *testing.T) {
	t.Parallel()
	endpoint := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
	with := func(extra map[string]string) func(string) string {
		env := map[string]string{}
		for _, m := range []map[string]string{endpoint, extra} {
			for k, v := range m {
				env[k] = v
			}
		}
		return func(k string) string { return env[k] }
	}
	for _, tc := range []struct {
		name string
		env  func(string) string
		on   bool
		err  string
	}{
		{name: "no endpoint: off", env: func(string) string { return "" }},
		{name: "an endpoint: on", env: with(nil), on: true},
		{name: "a traces endpoint: on", env: func(k string) string {
			return map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}[k]
		}, on: true},
		{name: "OTEL_SDK_DISABLED wins", env: with(map[string]string{"OTEL_SDK_DISABLED": "TRUE"})},
		{name: "OTEL_SDK_DISABLED=false is on", env: with(map[string]string{"OTEL_SDK_DISABLED": "false"}), on: true},
		{name: "exporter none", env: with(map[string]string{"OTEL_TRACES_EXPORTER": "none"})},
		{name: "another exporter", env: with(map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}), err: "otlp, or none"},
	} {
		on, err := tracingOn(tc.env)
		if on != tc.on || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: on=%v err=%v, want on=%v err containing %q", tc.name, on, err, tc.on, tc.err)
		}
	}
	// A protocol oncecall does not export with is refused before anything
	// starts.
	_, err := startTracing(t.Context(), with(map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}), zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), "http/protobuf") {
		t.Errorf("http/json: %v, want a refusal naming the supported protocols", err)
	}
}

func TestTraceURLNeedsATraceID(t *testing.T) {
	t.Parallel()
	for url, ok := range map[string]bool{
		"https://jaeger.example/trace/{trace_id}":     true,
		"http://127.0.0.1:16686/trace/{trace_id}?x=1": true,
		"https://jaeger.example/trace/":               false, // nowhere to put the id
		"javascript:alert(1)//{trace_id}":             false,
		"/trace/{trace_id}":                           false,
	} {
		c, err := consoleConfig(func(k string) string { return map[string]string{"ONCECALL_TRACE_URL": url}[k] })
		if (err == nil) != ok || (ok && c.TraceURL != url) {
			t.Errorf("ONCECALL_TRACE_URL=%q: %+v %v, want accepted %v", url, c.TraceURL, err, ok)
		}
	}
}
