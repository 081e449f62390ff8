package main

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// runCommand runs this test binary as the oncecall command with args and no
// DATABASE_URL, and returns what it printed and its exit status.
func runCommand(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asCommand+"=1", "DATABASE_URL=")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		t.Fatalf("oncecall %v: %v", args, err)
	}
	return string(out), 0
}

// Every command's and subcommand's --help (and -h) prints its usage and
// exits 0, with no database: asking how to run a command is not an error,
// and needs nothing the command would need to run.
func TestEveryCommandsHelpExitsZeroWithoutADatabase(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{
		"serve", "migrate", "tenant", "tenant create", "tenant stripe-account", "tenant twilio-sender",
		"key", "key create", "key retell", "reconcile", "actions", "actions list", "actions show",
		"actions resolve", "operator", "operator add", "operator link", "operator list", "operator end-sessions",
		"operator disable", "calendar", "calendar connect", "calendar check", "calendar show", "calendar disconnect", "calendar watch",
		"tools", "tools export", "prune", "healthcheck",
	} {
		for _, help := range []string{"--help", "-h"} {
			args := append(strings.Fields(cmd), help)
			out, code := runCommand(t, args...)
			if code != 0 || !strings.Contains(strings.ToLower(out), "usage") || strings.Contains(out, "DATABASE_URL is not set") {
				t.Errorf("oncecall %s: exit %d, printed:\n%s", strings.Join(args, " "), code, out)
			}
		}
	}
	for _, args := range [][]string{{"--help"}, {"help"}} {
		if out, code := runCommand(t, args...); code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("oncecall %v: exit %d, printed:\n%s", args, code, out)
		}
	}
	// No command, or a wrong one, is an error: usage and exit 1.
	for _, args := range [][]string{nil, {"nonsense"}, {"tenant", "nonsense"}, {"actions", "list", "--no-such-flag"}} {
		if out, code := runCommand(t, args...); code == 0 || !strings.Contains(strings.ToLower(out), "usage") {
			t.Errorf("oncecall %v: exit %d, printed:\n%s", args, code, out)
		}
	}
}

// serve --help names the settings a person looks for there that are a
// tenant's, not the server's: the caller-confirmation gate among them.
func TestServeHelpNamesTheTenantsSettings(t *testing.T) {
	t.Parallel()
	out, code := runCommand(t, "serve", "--help")
	if code != 0 || !strings.Contains(out, "--caller-confirmation") || !strings.Contains(out, "/console/") {
		t.Fatalf("oncecall serve --help: exit %d, no --caller-confirmation or console:\n%s", code, out)
	}
}
