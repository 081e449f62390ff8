package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/dashatool"
)

func TestToolsExport(t *testing.T) {
	t.Parallel()
	var out, errs bytes.Buffer
	err := run(context.Background(), []string{"tools", "export", "--base-url", "https://calls.example.org/", "--api-key-placeholder", "KEY"}, &out, &errs)
	if err != nil {
		t.Fatalf("export: %v (%s)", err, errs.String())
	}
	defs, err := dashatool.Definitions(app.Operations(), "https://calls.example.org", "KEY")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := dashatool.Marshal(defs)
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("export printed something else than the definitions:\n%s", out.String())
	}
	var printed []dashatool.Definition
	if err := json.Unmarshal(out.Bytes(), &printed); err != nil || len(printed) != len(defs) {
		t.Fatalf("printed %d definitions: %v", len(printed), err)
	}
	if printed[0].Webhook.Headers["Authorization"] != "Bearer KEY" || !strings.HasPrefix(printed[0].Webhook.URL, "https://calls.example.org/v1/dasha/tools/") {
		t.Fatalf("webhook: %+v", printed[0].Webhook)
	}

	dir := t.TempDir()
	out.Reset()
	if err := run(context.Background(), []string{"tools", "export", "--base-url", "https://calls.example.org", "--out", dir}, &out, &errs); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != len(defs) {
		t.Fatalf("wrote %d files for %d tools", len(files), len(defs))
	}
	b, err := os.ReadFile(filepath.Join(dir, "book_appointment.json"))
	if err != nil || !bytes.Contains(b, []byte("Bearer "+dashatool.DefaultAPIKeyPlaceholder)) {
		t.Fatalf("book_appointment.json: %v %s", err, b)
	}

	for _, args := range [][]string{{"tools"}, {"tools", "export"}, {"tools", "export", "--base-url", "localhost:8080"}} {
		if err := run(context.Background(), args, &out, &errs); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
