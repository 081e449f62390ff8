package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/oncecall/oncecall/internal/testkit/nodetest"
)

// platformCheckDir holds the pinned SDKs of Vapi, Retell and ElevenLabs and
// check.mjs, which types the exported definitions with them.
const platformCheckDir = "../../clients/platform-check"

// TestToolsExportTypeChecksWithPlatformSDKs exports every platform's
// definitions and has clients/platform-check/check.mjs check them against the
// platforms' official SDKs from npm (pinned by its package-lock.json): tsc
// --noEmit over each definition as an object literal of the SDK's create-tool
// request type (so a key the platform does not list is an error), and
// ElevenLabs' wire JSON through the SDK's own serializer. It needs Node.js
// 20+ and npm: skipped without them, a failure in CI.
func TestToolsExportTypeChecksWithPlatformSDKs(t *testing.T) {
	t.Parallel()
	node, npm := nodetest.Node(t)
	nodetest.Install(t, platformCheckDir, npm)
	dir := t.TempDir()
	for _, platform := range []string{"vapi", "retell", "elevenlabs"} {
		var out, errs bytes.Buffer
		err := run(context.Background(), []string{"tools", "export", "--platform", platform,
			"--base-url", "https://oncecall.example.com", "--api-key-placeholder", "KEY"}, &out, &errs)
		if err != nil {
			t.Fatalf("%s: %v (%s)", platform, err, errs.String())
		}
		if err := os.WriteFile(filepath.Join(dir, platform+".json"), out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := nodetest.Output(t, platformCheckDir, nil, node, "check.mjs", dir)
	m := regexp.MustCompile(`(?m)^platform-check: (\d+) passed, (\d+) failed$`).FindStringSubmatch(out)
	if err != nil || m == nil || m[2] != "0" {
		t.Fatalf("the exported definitions do not match the platforms' SDKs (%v):\n%s", err, out)
	}
	// One tsc run, and per ElevenLabs tool its round trip and its properties.
	if n, _ := strconv.Atoi(m[1]); n < 1+20*3 {
		t.Fatalf("only %d checks ran:\n%s", n, out)
	}
	t.Log(out)
}
