package console_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/oncecall/oncecall/internal/testkit/buildtest"
)

// linkPattern finds the one-time link that `oncecall operator add` prints.
var linkPattern = regexp.MustCompile(`https?://\S+/console/welcome\?t=\S+`)

// operatorAdd runs the real `oncecall operator add` against the database
// at dbURL, as a person with a terminal does, and returns the sign-in link
// it prints.
func operatorAdd(t *testing.T, dbURL, base string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, buildtest.Command(t, "cmd/oncecall"), append([]string{"operator", "add", "--base-url", base}, args...)...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("oncecall operator add: %v\n%s%s", err, out.String(), errOut.String())
	}
	link := linkPattern.FindString(out.String())
	if link == "" {
		t.Fatalf("oncecall operator add printed no sign-in link:\n%s", out.String())
	}
	return link
}

// TestFirstSignInThroughTheLink is a person's first day: an admin adds her
// with `oncecall operator add` (the real command), she opens the link it
// prints in chromium, chooses her password, and lands signed in on the
// queue; her sign-in is in her tenant's audit trail, and the link is spent.
func TestFirstSignInThroughTheLink(t *testing.T) {
	tab := browser(t)
	s := startStack(t, "Riverside Clinic", time.Hour)
	link := operatorAdd(t, s.e.DBURL, s.e.URL, "--name", "Ana Ruiz", "--email", "ana@clinic.example",
		"--role", "resolver", "--tenant", s.tenant.ID.String())

	do(t, tab, "open the link", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("welcome")))
	do(t, tab, "choose a password",
		chromedp.SendKeys(chromedp.ID("password"), "copper lantern meadow tuba"),
		chromedp.SendKeys(chromedp.ID("again"), "copper lantern meadow tuba"),
		chromedp.Click(chromedp.CSS(`#welcome button`)), chromedp.WaitVisible(chromedp.CSS("#who, #error")))
	if who, err := chromedp.Run(tab, chromedp.Evaluate[string](`(document.getElementById("who")||{}).textContent||""`)); err != nil || who != "Ana Ruiz" {
		html, _ := chromedp.Run(tab, chromedp.OuterHTML(chromedp.CSS("main")))
		t.Fatalf("after choosing a password: signed in as %q (%v); the page:\n%s", who, err, html)
	}
	do(t, tab, "the queue", chromedp.WaitVisible(chromedp.ID("queue")))
	if u, err := chromedp.Run(tab, chromedp.Location()); err != nil || !strings.HasSuffix(u, "/console/") {
		t.Fatalf("landed on %q (%v), want the queue", u, err)
	}
	if n := s.e.Count(`SELECT count(*) FROM operator_sessions s JOIN operators o ON o.id = s.operator_id
		WHERE o.email = 'ana@clinic.example' AND s.revoked_at IS NULL AND o.password_hash IS NOT NULL`); n != 1 {
		t.Fatalf("%d open sessions with a password set, want 1", n)
	}
	if n := s.e.Count(`SELECT count(*) FROM operator_audit WHERE kind = 'signed_in' AND operator_name = 'Ana Ruiz' AND tenant_id = $1`, s.tenant.ID); n != 1 {
		t.Fatalf("%d sign-ins of hers in her tenant's audit trail, want 1", n)
	}
	// The link is spent: opening it again says so.
	do(t, tab, "the link again", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("error")))
	if msg := text(t, tab, "#error"); !strings.Contains(msg, "used already") {
		t.Fatalf("the spent link: %q", msg)
	}
}
