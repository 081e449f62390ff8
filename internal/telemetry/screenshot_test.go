package telemetry_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// screenshot writes a PNG of Jaeger's page of a trace to the folder
// ONCECALL_SCREENSHOTS names (docs/observability.md shows it), when it
// names one; the Jaeger started must serve its UI (jaegertest.UIAssets).
func screenshot(t *testing.T, url, name string) {
	t.Helper()
	dir := os.Getenv("ONCECALL_SCREENSHOTS")
	if dir == "" {
		return
	}
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("a screenshot needs chromium: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1500, 900),
	)
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	// The trace's timeline is drawn once its span rows are.
	if err := chromedp.Do(tab, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`.span-row`))); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
