package main

import (
	"io"
	"strings"
	"testing"
)

// Flags a calls run cannot take are refused before anything starts.
func TestCallsRefusesFlagsOfOtherRuns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--calls", "10", "--stripe"}, "--calls runs payments and messaging"},
		{[]string{"--calls", "10", "--failover"}, "--calls runs payments and messaging"},
		{[]string{"--calls", "10", "--only", "3,x"}, `"x" is not a call number`},
		{[]string{"--calls", "10", "--concurrency", "0"}, "must be positive"},
		{[]string{"--calls", "10", "extra"}, `unexpected argument "extra"`},
	} {
		err := run(t.Context(), tc.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("chaos %s: %v, want an error saying %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}
