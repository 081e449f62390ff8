// Package nodetest runs the tests of oncecall's JavaScript and Python client folders (clients/...)
// from Go tests: it finds node, npm and python3, and installs a folder's pinned npm packages.
// Outside CI (the CI environment variable unset) a test is skipped when a tool is missing; in CI
// that is a failure, so those tests can never pass by not running.
package nodetest

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Node returns the paths of node and npm.
func Node(t testing.TB) (node, npm string) {
	t.Helper()
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		missing(t, "node and npm are not on PATH: install Node.js 20+")
	}
	return node, npm
}

// Python returns the path of python3.
func Python(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		missing(t, "python3 is not on PATH: install Python 3.9+")
	}
	return p
}

func missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("nodetest: CI runs this test: %s", msg)
	}
	t.Skipf("nodetest: skipped, %s; CI has it and fails without it", msg)
}

// Install runs `npm ci` in dir when its node_modules is missing or older
// than its package-lock.json, so a fresh checkout and a changed lock file
// both get exactly the pinned packages.
func Install(t testing.TB, dir, npm string) {
	t.Helper()
	lock, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatalf("nodetest: %s has no package-lock.json: %v", dir, err)
	}
	installed, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		t.Fatal(err)
	case !installed.ModTime().Before(lock.ModTime()):
		return
	}
	Run(t, dir, npm, "ci", "--no-audit", "--no-fund")
}

// Run runs a command in dir and returns its combined output, failing the
// test when it fails.
func Run(t testing.TB, dir, name string, args ...string) string {
	t.Helper()
	out, err := Output(t, dir, nil, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return out
}

// Output runs a command in dir with env added to the test's environment
// and returns its combined output and error.
func Output(t testing.TB, dir string, env []string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
