package jaegertest_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/testkit/jaegertest"
)

// TestBinaryBuilds builds Jaeger (or finds its build in the cache) and
// runs it: make jaeger runs it alone, so that CI pays for the first build
// in a step of its own.
func TestBinaryBuilds(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(jaegertest.Binary(t), "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "gitVersion") {
		t.Fatalf("jaeger version: %v\n%s", err, out)
	}
}
