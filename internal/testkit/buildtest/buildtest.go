// Package buildtest builds this module's commands for tests that run them
// as child processes (oncecall serve, the provider simulator): each command
// once per test process, however many tests ask for it at once, into a
// folder removed when the tests end. Built with the go command's defaults,
// as the test binary itself was, a build reuses the packages already in
// the build cache and only links: a test never pays for a whole build of
// its own, nor races other tests for the CPU with one (a build with other
// flags, such as -trimpath, compiles everything again, the standard
// library included).
package buildtest

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// Module is this module's path; a command is named by its folder in it.
const Module = "github.com/oncecall/oncecall"

// binaries are the commands built in this test process, in one folder.
var binaries struct {
	mu     sync.Mutex
	dir    string
	builds map[string]*build
}

type build struct {
	once sync.Once
	path string
	err  error
}

// Main runs the tests with run (m.Run, or pgtest.Main), then removes what
// Command built: a TestMain calls os.Exit(buildtest.Main(m, pgtest.Main)).
func Main(m *testing.M, run func(*testing.M) int) int {
	code := run(m)
	binaries.mu.Lock()
	defer binaries.mu.Unlock()
	if binaries.dir != "" {
		os.RemoveAll(binaries.dir)
	}
	return code
}

// Command returns the path of the command in the module's folder cmd
// ("cmd/oncecall"), built for this test process: the first test to ask
// builds it, the others wait for that build. A failed build fails every
// test that asks.
func Command(t testing.TB, cmd string) string {
	t.Helper()
	b, err := builder(cmd)
	if err != nil {
		t.Fatal(err)
	}
	b.once.Do(func() { b.path, b.err = goBuild(b.path, cmd) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

func builder(cmd string) (*build, error) {
	binaries.mu.Lock()
	defer binaries.mu.Unlock()
	if binaries.dir == "" {
		dir, err := os.MkdirTemp("", "oncecall-test-bin-")
		if err != nil {
			return nil, err
		}
		binaries.dir, binaries.builds = dir, map[string]*build{}
	}
	b := binaries.builds[cmd]
	if b == nil {
		b = &build{path: filepath.Join(binaries.dir, path.Base(cmd))}
		binaries.builds[cmd] = b
	}
	return b, nil
}

func goBuild(bin, cmd string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(goBin, "build", "-o", bin, path.Join(Module, cmd)).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", cmd, err, out)
	}
	return bin, nil
}
