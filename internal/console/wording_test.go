package console_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/crypto/bcrypt"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/internal/staff"
)

// The pages speak as the front desk does: states, operations and
// providers in words, numbers with their nouns, no past time as the next
// check, and the command line named once.
func TestPagesSpeakTheFrontDesksWords(t *testing.T) {
	t.Parallel()
	s := startStack(t, "Riverside Clinic", time.Millisecond)
	id := s.stuckBooking(t, "words-1", 1)
	s.reconcile(t) // nothing proves it: it waits for a person
	if _, _, err := staff.New(staff.Config{Store: s.e.Store, Cost: bcrypt.MinCost}).Add(t.Context(),
		oncecall.Actor{Name: "command line", Via: oncecall.ViaCommand},
		staff.Person{Name: "Cy Clerk", Email: "cy@clinic.example", Role: oncecall.RoleViewer, TenantID: uuid.Nil}); err != nil {
		t.Fatal(err)
	}
	ops := s.signedInClient(t, "Ana")
	queue := send(t, ops, http.MethodGet, s.e.URL+"/console/", nil).body
	visible := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(queue, " ")
	for _, want := range []string{"needs a person", "1 action in the queue", "Refreshes every 5 seconds", "Booking", "Google Calendar"} {
		if !strings.Contains(strings.Join(strings.Fields(visible), " "), want) {
			t.Errorf("the queue does not say %q", want)
		}
	}
	for _, internal := range []string{" needs_operator ", " appointment.book ", "5000 ms", " http ", "1 actions"} {
		if strings.Contains(" "+strings.Join(strings.Fields(visible), " ")+" ", internal) {
			t.Errorf("the queue shows %q to people", strings.TrimSpace(internal))
		}
	}
	page := send(t, ops, http.MethodGet, s.e.URL+"/console/actions/"+id.String(), nil).body
	steps := page[strings.Index(page, `id="steps"`):]
	steps = steps[:strings.Index(steps, "</table>")]
	if !strings.Contains(steps, "none: it waits for a person") {
		t.Errorf("the next check of a step waiting for a person is not said so:\n%s", steps)
	}
	audit := send(t, ops, http.MethodGet, s.e.URL+"/console/audit", nil).body
	if strings.Contains(audit, "command line (command line)") || !strings.Contains(audit, "command line") {
		t.Error("the audit trail names the command line twice, or not at all")
	}
}
