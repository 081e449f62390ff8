package main

import (
	"bytes"
	"strings"
	"testing"
)

// Bad database settings stop serve before it opens anything.
func TestServeRejectsBadDatabaseSettings(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--db-lock-timeout", "0"},
		{"--db-statement-timeout", "2h"},
		{"--db-idle-in-transaction-timeout", "-1s"},
		{"--tenant-db-requests", "9", "--db-max-conns", "8"},
		{"--tenant-db-wait", "0s"},
		{"--dasha-budget", "10s"},
		{"--dasha-wait", "8s", "--dasha-budget", "8s"},
		{"--answer-cache-bytes", "-1"},
		{"--answer-cache-age", "0s"},
		{"--answer-cache-age", "2h", "--response-retention", "1h"},
	} {
		var out bytes.Buffer
		err := run(t.Context(), append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir()}, args...), &out, &out)
		if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(args[0], "--")) {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// Not parallel: it changes the environment. An operator token too short to
// be unguessable stops serve before anything starts, naming the setting.
func TestServeRefusesAShortOperatorToken(t *testing.T) {
	t.Setenv("ONCECALL_OPERATOR_TOKEN", "abc")
	t.Setenv("DATABASE_URL", "")
	t.Setenv("ONCECALL_REQUIRE_DATABASE_URL", "1") // and so no embedded database either way
	var out bytes.Buffer
	err := run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir()}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "ONCECALL_OPERATOR_TOKEN is 3 characters") || !strings.Contains(err.Error(), "at least 32") {
		t.Fatalf("serve with a 3-character operator token: %v", err)
	}
}
