// Command testsummary runs go test with the given arguments and prints what
// go test prints without -v (a line per package, the output of failed
// tests), followed by every skipped test with its reason, which plain go
// test shows only with -v. make test runs it:
//
//	go run ./cmd/testsummary -count=1 ./...
//
// It exits with go test's status.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

func main() {
	cmd := exec.Command("go", append([]string{"test", "-json"}, os.Args[1:]...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	skips, failed := report(out, os.Stdout)
	err = cmd.Wait()
	if len(skips) > 0 {
		fmt.Printf("\n%d tests skipped (go test -v shows them too):\n", len(skips))
		for _, s := range skips {
			fmt.Println("  " + s)
		}
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode())
	case err != nil:
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	case failed:
		os.Exit(1)
	}
}

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// report copies go test -json's events from r to w as go test would print
// them without -v, and returns the skipped tests ("package TestName: why")
// and whether anything failed.
func report(r io.Reader, w io.Writer) (skips []string, failed bool) {
	type key struct{ pkg, test string }
	outputs := map[key][]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(w, sc.Text()) // not an event: pass it on
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "build-output":
			fmt.Fprint(w, e.Output)
		case "output":
			if e.Test == "" {
				if e.Output != "PASS\n" && !strings.HasPrefix(e.Output, "=== ") {
					fmt.Fprint(w, e.Output)
				}
				continue
			}
			if !strings.HasPrefix(e.Output, "=== ") {
				outputs[k] = append(outputs[k], e.Output)
			}
		case "fail":
			failed = true
			if e.Test != "" {
				// go test -json sends the "--- FAIL" line after the test's
				// log; go test without -v prints it first.
				lines := outputs[k]
				for i, l := range lines {
					if strings.HasPrefix(strings.TrimSpace(l), "--- FAIL") {
						lines = append(append([]string{l}, lines[:i]...), lines[i+1:]...)
						break
					}
				}
				fmt.Fprint(w, strings.Join(lines, ""))
			}
			delete(outputs, k)
		case "skip":
			if e.Test != "" {
				skips = append(skips, e.Package+" "+e.Test+": "+reason(outputs[k]))
			}
			delete(outputs, k)
		case "pass":
			delete(outputs, k)
		}
	}
	return skips, failed
}

// reason is the message a skipped test logged, without its "--- SKIP" line
// and file:line prefix.
func reason(lines []string) string {
	var parts []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		if _, msg, ok := strings.Cut(l, ".go:"); ok {
			if _, rest, ok := strings.Cut(msg, ": "); ok {
				l = rest
			}
		}
		parts = append(parts, l)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, " ")
}
