package dashatool_test

import (
	"os"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/dashatool"
)

// docs/dasha.md's tool table lists every tool oncecall exports.
func TestDashaDocListsEveryTool(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/dasha.md")
	if err != nil {
		t.Fatal(err)
	}
	defs, err := dashatool.Definitions(app.Operations(), "https://oncecall.example.com", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, def := range defs {
		if !strings.Contains(string(doc), "\n| `"+def.Name+"` |") {
			t.Errorf("docs/dasha.md's tool table has no row for %s", def.Name)
		}
	}
}
