package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
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
		{"--db-wait", "0s"},
		{"--dasha-budget", "10s"},
		{"--dasha-wait", "8s", "--dasha-budget", "8s"},
		{"--answer-cache-bytes", "-1"},
		{"--answer-cache-age", "0s"},
		{"--answer-cache-age", "2h", "--response-retention", "1h"},
		{"--prune-duty", "0"},
		{"--prune-duty", "1.5"},
		{"--prune-duty", "NaN"},
		{"--prune-batch", "0"},
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

// Not parallel: it changes the environment. A response retention under a
// minute is a valid setting: the answer cache's age, unless set, is
// derived from it. A wrong answer cache setting is named alone.
func TestAnswerCacheSettingsFollowTheRetention(t *testing.T) {
	// Past the settings' checks, serve stops at the database: nothing listens there.
	t.Setenv("DATABASE_URL", "postgres://oncecall@127.0.0.1:1/none?connect_timeout=5")
	const started = "127.0.0.1:1"
	serve := func(args ...string) error {
		var out bytes.Buffer
		return run(t.Context(), append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir()}, args...), &out, &out)
	}
	if err := serve("--response-retention", "1s"); err == nil || !strings.Contains(err.Error(), started) {
		t.Errorf("--response-retention 1s: %v", err)
	}
	t.Setenv("RESPONSE_RETENTION", "30s")
	if err := serve(); err == nil || !strings.Contains(err.Error(), started) {
		t.Errorf("RESPONSE_RETENTION=30s: %v", err)
	}
	t.Setenv("RESPONSE_RETENTION", "")
	for _, c := range []struct {
		args  []string
		names string
	}{
		{[]string{"--answer-cache-bytes", "-1"}, "--answer-cache-bytes"},
		{[]string{"--answer-cache-age", "0s"}, "--answer-cache-age"},
		{[]string{"--answer-cache-age", "2h", "--response-retention", "1h"}, "--answer-cache-age 2h0m0s must be shorter than --response-retention 1h0m0s"},
	} {
		err := serve(c.args...)
		if err == nil || !strings.Contains(err.Error(), c.names) {
			t.Errorf("%v: %v, want an error naming %s", c.args, err, c.names)
			continue
		}
		for _, other := range []string{"--answer-cache-bytes", "--answer-cache-age", "--response-retention"} {
			if !strings.Contains(c.names, other) && strings.Contains(err.Error(), other) {
				t.Errorf("%v: %v names %s, which is right", c.args, err, other)
			}
		}
	}
}

// The answer cache's age, unless set, is a minute or half the response
// retention, whichever is shorter; no bytes keeps no answers.
func TestAnswerCacheAgeIsDerivedFromTheRetention(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		bytes     int
		age       time.Duration
		set       bool
		retention time.Duration
		wantBytes int
		wantAge   time.Duration
	}{
		{8 << 20, 0, false, 24 * time.Hour, 8 << 20, time.Minute},
		{8 << 20, 0, false, 90 * time.Second, 8 << 20, 45 * time.Second},
		{8 << 20, 0, false, time.Second, 8 << 20, 500 * time.Millisecond},
		{8 << 20, 0, false, time.Nanosecond, -1, 0},
		{8 << 20, 10 * time.Second, true, 30 * time.Second, 8 << 20, 10 * time.Second},
		{0, 0, false, time.Hour, -1, time.Minute},
	} {
		n, age := c.bytes, c.age
		if err := checkAnswerCache(&n, &age, c.set, c.retention); err != nil || n != c.wantBytes || age != c.wantAge {
			t.Errorf("%+v: bytes %d, age %v, %v", c, n, age, err)
		}
	}
}
