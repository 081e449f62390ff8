package dashatool_test

import (
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/dashatool"
)

// A read-only tool's fallBackResult speaks of a look-up that failed, not of
// something that may have happened; a write tool's of an unknown outcome.
func TestReadToolFallbacksSpeakOfALookUp(t *testing.T) {
	t.Parallel()
	defs, err := dashatool.Definitions(app.Operations(), "https://oncecall.example.com", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, def := range defs {
		say := strings.ToLower(def.FallBackResult.Say)
		if def.FallBackResult.Outcome != "pending" {
			t.Errorf("%s: fallBackResult outcome %q, want pending", def.Name, def.FallBackResult.Outcome)
		}
		readOnly := dashatool.ReadOnly(def.Name)
		if readOnly && (strings.Contains(say, "happened") || !strings.Contains(say, "look")) {
			t.Errorf("read tool %s: fallBackResult say %q must speak of a failed look-up, not of whether it happened", def.Name, def.FallBackResult.Say)
		}
		if !readOnly && !strings.Contains(say, "not confirmed") {
			t.Errorf("write tool %s: fallBackResult say %q must say it is not confirmed", def.Name, def.FallBackResult.Say)
		}
	}
}
