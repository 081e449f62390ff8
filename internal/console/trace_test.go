package console_test

import (
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/app"
)

// An action whose claiming request was traced shows that trace's id, and
// links it in the trace viewer when ONCECALL_TRACE_URL gives one.
func TestActionPageShowsItsTrace(t *testing.T) {
	t.Parallel()
	s := startStackWith(t, "Traced Dental", time.Hour, func(c *app.Config) {
		c.Console.TraceURL = "https://jaeger.example/trace/{trace_id}?uiFind=x"
	})
	id := s.stuckBooking(t, "traced-1", 1)
	untraced := s.stuckBooking(t, "untraced-1", 2)
	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	kept, err := hex.DecodeString(traceID + spanID + "01")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.e.Store.Pool().Exec(t.Context(), "UPDATE actions SET trace_context = $2 WHERE id = $1", id, kept); err != nil {
		t.Fatal(err)
	}
	ops := s.signedInClient(t, "Ana")
	a := send(t, ops, http.MethodGet, s.e.URL+"/console/actions/"+id.String(), nil)
	want := `<dd class="mono" id="trace"><a href="https://jaeger.example/trace/` + traceID + `?uiFind=x" rel="noopener">` + traceID + `</a></dd>`
	if a.status != http.StatusOK || !strings.Contains(a.body, want) {
		t.Fatalf("action page without its trace %s: %d\n%s", want, a.status, a.body)
	}
	a = send(t, ops, http.MethodGet, s.e.URL+"/console/actions/"+untraced.String(), nil)
	if a.status != http.StatusOK || strings.Contains(a.body, `id="trace"`) {
		t.Fatalf("an untraced action's page shows a trace: %d\n%s", a.status, a.body)
	}
}
