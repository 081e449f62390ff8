package main

import (
	"strings"
	"testing"
)

// serve's help names the caller-confirmation gate and where it is set: an
// operator looking for it among the server's flags finds the tenant's.
func TestServeHelpNamesTheConfirmationGate(t *testing.T) {
	t.Parallel()
	out, code := runCommand(t, "serve", "--help")
	if code != 0 || !strings.Contains(out, "--caller-confirmation on|off") || !strings.Contains(out, "oncecall tenant update") {
		t.Fatalf("oncecall serve --help: exit %d, printed:\n%s", code, out)
	}
}
