package main

import (
	"bytes"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

func TestVersionFromBuildInfo(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"--version", "version"} {
		var out, errs bytes.Buffer
		if err := run(t.Context(), []string{arg}, &out, &errs); err != nil {
			t.Fatalf("%s: %v %s", arg, err, errs.String())
		}
		line := strings.TrimSpace(out.String())
		if !regexp.MustCompile(`^oncecall \S+ commit \S+ go1\.\S+ \S+/\S+$`).MatchString(line) || !strings.Contains(line, runtime.Version()) {
			t.Fatalf("%s printed %q", arg, line)
		}
	}
}

// A release build made without git (a container build copies no .git)
// says the commit it was stamped with, not "commit unknown".
func TestVersionSaysTheStampedCommit(t *testing.T) {
	t.Parallel()
	if line := versionOf("0123456789ab"); !strings.Contains(line, " commit 0123456789ab") && !strings.Contains(line, " commit 0123456789ab+dirty") {
		// A test binary has no version control information: the stamp is
		// what it says.
		t.Fatalf("a build stamped with commit 0123456789ab says %q", line)
	}
}

func TestMakeHelpListsEveryTarget(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	makefile := string(b)
	targets := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):`).FindAllStringSubmatch(makefile, -1) {
		targets[m[1]] = true
	}
	_, recipe, ok := strings.Cut(makefile, "\nhelp:\n")
	if !ok {
		t.Fatal("the Makefile has no help target")
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\t@echo 'make ([a-z0-9-]+) +\S.*'$`).FindAllStringSubmatch(recipe, -1) {
		if listed[m[1]] {
			t.Errorf("make help lists %s twice", m[1])
		}
		listed[m[1]] = true
		if !targets[m[1]] {
			t.Errorf("make help lists %s, which is not a target", m[1])
		}
	}
	for target := range targets {
		if !listed[target] {
			t.Errorf("make help does not list the target %s", target)
		}
	}
}
