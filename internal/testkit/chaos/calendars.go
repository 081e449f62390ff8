package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/calendars"
	"github.com/oncecall/oncecall/internal/sim/calcom"
	"github.com/oncecall/oncecall/internal/sim/calsimtest"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/simkit"
)

// The calendars part of a run (Config.Calendars): three more tenants, each
// connected to its own calendar (Google Calendar, Microsoft 365, Cal.com),
// each calendar a fake (cmd/calendarsim) running as a process with the
// same faults as the provider simulator's. Half the bookings go to their
// slots, through oncecall's calendar adapters; the audit counts the events
// the fakes hold, by the action each is marked with and the slot its time
// is.

// Calendar settings of the replicas: a call times out after calendarTimeout
// (and some simulated delays are longer: those writes land after oncecall
// gave up); reads lag up to lookupLag; "not found" counts only past
// calendarVisible, which covers both.
const (
	calendarTimeout = time.Second
	calendarVisible = 4 * time.Second
	// calendarSlots is how many half-hour slots each calendar tenant has.
	calendarSlots = 600
	calendarEvent = "4242" // the Cal.com event type of the tenant's practitioner
)

// calendarSide is one calendar tenant and its fake.
type calendarSide struct {
	name   string // google, microsoft or calcom
	url    string
	cmd    *exec.Cmd
	done   chan struct{}
	tenant uuid.UUID
	acct   *account
	slots  []string
	// slotAt names the slot each start time is.
	slotAt map[time.Time]string
	// secretEnv holds secret on the replicas.
	secretEnv, secret string
}

// calendarFaults are the fakes' faults during the run phase.
func calendarFaults() []simkit.Rule {
	p := func(v float64) *float64 { return &v }
	return []simkit.Rule{
		{Fault: "drop_response", On: simkit.OnWrite, Probability: p(0.05)},
		{Fault: "fail_before_commit", On: simkit.OnWrite, Probability: p(0.04)},
		{Fault: "fail_after_commit", On: simkit.OnWrite, Probability: p(0.04)},
		{Fault: "delay=" + longDelay.String(), On: simkit.OnWrite, Probability: p(0.04)},
		{Fault: "delay=200ms", On: simkit.OnWrite, Probability: p(0.05)},
		{Fault: "lookup_lag=" + lookupLag.String(), On: simkit.OnRead, Probability: p(0.5)},
		{Fault: "fail_before_commit", On: simkit.OnRead, Probability: p(0.1)},
		{Fault: "drop_response", On: simkit.OnRead, Probability: p(0.05)},
	}
}

// startCalendars builds cmd/calendarsim, starts the three fakes with their
// logs in dir, and seeds a tenant connected to each.
func startCalendars(ctx context.Context, dir string, store *db.Store) ([]*calendarSide, error) {
	bin := filepath.Join(dir, "calendarsim")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/oncecall/oncecall/cmd/calendarsim").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build calendarsim: %w\n%s", err, out)
	}
	var sides []*calendarSide
	for _, name := range []string{oncecall.CalendarGoogle, oncecall.CalendarMicrosoft, oncecall.CalendarCalcom} {
		side, err := startFake(bin, dir, name)
		if err != nil {
			stopCalendars(sides)
			return nil, err
		}
		sides = append(sides, side)
		if err := side.seed(ctx, store); err != nil {
			stopCalendars(sides)
			return nil, fmt.Errorf("seed the %s tenant: %w", name, err)
		}
	}
	return sides, nil
}

// startFake runs one fake and waits for the address it listens on.
func startFake(bin, dir, name string) (*calendarSide, error) {
	logFile, err := os.Create(filepath.Join(dir, "calendarsim-"+name+".log"))
	if err != nil {
		return nil, err
	}
	s := &calendarSide{name: name, done: make(chan struct{}), secretEnv: "CHAOS_CALENDAR_" + strings.ToUpper(name)}
	s.cmd = exec.Command(bin, "--provider", name, "--addr", "127.0.0.1:0")
	s.cmd.Env = append(os.Environ(), "LOG_LEVEL=info")
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start calendarsim %s: %w", name, err)
	}
	addr := make(chan string, 1)
	go func() {
		defer logFile.Close()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logFile.Write(append(sc.Bytes(), '\n')) //nolint:errcheck // a log line lost is not the run's failure
			var l struct{ Message, Addr string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Message == "listening" {
				select {
				case addr <- l.Addr:
				default:
				}
			}
		}
		_ = s.cmd.Wait()
		close(s.done)
	}()
	select {
	case a := <-addr:
		s.url = "http://" + a
	case <-s.done:
		return nil, fmt.Errorf("calendarsim %s exited before listening", name)
	case <-time.After(20 * time.Second):
		s.stop()
		return nil, fmt.Errorf("calendarsim %s did not listen within 20s", name)
	}
	return s, nil
}

func (s *calendarSide) stop() {
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

func stopCalendars(sides []*calendarSide) {
	for _, s := range sides {
		s.stop()
	}
}

// seed makes the side's tenant: a practitioner at a location, connected to
// the fake, with customers and half-hour slots from tomorrow on between
// 08:00 and 18:00 UTC (the hours the Cal.com fake books).
func (s *calendarSide) seed(ctx context.Context, store *db.Store) error {
	org := "chaos-org-" + s.name
	t, key, err := store.CreateTenantWith(ctx, db.NewTenant{Name: "chaos-" + s.name, DashaOrgID: org, Timezone: "Europe/Madrid"})
	if err != nil {
		return err
	}
	s.tenant, s.acct = t.ID, &account{key: key, org: org}
	loc, _, err := store.CreateLocation(ctx, oncecall.NewLocation{TenantID: t.ID, Name: "Centro", Timezone: "Europe/Madrid", Address: "Calle Mayor 1"})
	if err != nil {
		return err
	}
	p, _, err := store.CreatePractitioner(ctx, oncecall.NewPractitioner{TenantID: t.ID, Name: "Dr. Ortiz", LocationIDs: []uuid.UUID{loc.ID}})
	if err != nil {
		return err
	}
	for i := range 10 {
		c, err := store.CreateCustomer(ctx, db.NewCustomer{
			TenantID: t.ID, Name: fmt.Sprintf("Caller %d", i), Phone: fmt.Sprintf("+3460001%04d", i), Email: fmt.Sprintf("caller%d@example.com", i),
		})
		if err != nil {
			return err
		}
		s.acct.customers = append(s.acct.customers, c.ID.String())
	}
	conn := oncecall.CalendarConnection{TenantID: t.ID, Provider: s.name, Credentials: "env:" + s.secretEnv, Settings: map[string]string{}}
	calendarID := "ortiz@clinic.example"
	switch s.name {
	case oncecall.CalendarGoogle:
		key, err := calsimtest.GoogleKey(s.url + "/token")
		if err != nil {
			return err
		}
		conn.BaseURL, s.secret = s.url+"/calendar/v3", string(key)
	case oncecall.CalendarMicrosoft:
		conn.BaseURL, s.secret = s.url+"/v1.0", "chaos-graph-secret"
		conn.Settings = map[string]string{calendars.SettingDirectory: "chaos.onmicrosoft.com", calendars.SettingClient: "chaos-app",
			calendars.SettingAuthority: s.url}
	case oncecall.CalendarCalcom:
		conn.BaseURL, s.secret, calendarID = s.url, calcom.DefaultAPIKey, calendarEvent
	}
	if _, err := store.ConnectCalendar(ctx, conn, []oncecall.CalendarMapping{{PractitionerID: p.ID, CalendarID: calendarID}}); err != nil {
		return err
	}
	s.slotAt = map[time.Time]string{}
	rows := make([][]any, 0, calendarSlots)
	day := time.Now().UTC().AddDate(0, 0, 1).Truncate(24 * time.Hour)
	for d := 0; len(rows) < calendarSlots; d++ {
		for m := 8 * 60; m < 18*60 && len(rows) < calendarSlots; m += 30 {
			start := day.AddDate(0, 0, d).Add(time.Duration(m) * time.Minute)
			id, err := uuid.NewV7()
			if err != nil {
				return err
			}
			rows = append(rows, []any{id, t.ID, start, start.Add(30 * time.Minute), p.ID, loc.ID})
			s.slots = append(s.slots, id.String())
			s.slotAt[start] = id.String()
		}
	}
	_, err = store.Pool().CopyFrom(ctx, pgx.Identifier{"slots"}, []string{"id", "tenant_id", "starts_at", "ends_at", "practitioner_id", "location_id"},
		pgx.CopyFromRows(rows))
	return err
}

// fault sets a rule on the fake (POST /sim/faults) and returns its id.
func (s *calendarSide) fault(ctx context.Context, r simkit.Rule) (int64, error) {
	b, _ := json.Marshal(r) // a rule of strings and numbers: cannot fail
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/sim/faults", bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	var got simkit.Rule
	if res.StatusCode != http.StatusCreated || json.NewDecoder(res.Body).Decode(&got) != nil {
		return 0, fmt.Errorf("set a fault on the %s fake: %d", s.name, res.StatusCode)
	}
	return got.ID, nil
}

// clearFaults removes every rule of the fake.
func (s *calendarSide) clearFaults(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, s.url+"/sim/faults", nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		return errors.New("clear the " + s.name + " fake's faults: " + res.Status)
	}
	return nil
}

// calendarEnv is what the replicas need of the calendars: the secrets the
// connections name, and the calls' bounds.
func calendarEnv(sides []*calendarSide) []string {
	env := []string{
		"ONCECALL_CALENDAR_TIMEOUT=" + calendarTimeout.String(),
		"ONCECALL_CALENDAR_VISIBILITY_DELAY=" + calendarVisible.String(),
		"ONCECALL_CALENDAR_READ_TTL=1s",
	}
	for _, s := range sides {
		env = append(env, s.secretEnv+"="+s.secret)
	}
	return env
}

// writes reads the fake's events as provider writes for the audit: each
// event oncecall made (it carries its action's mark) is a write of that
// action's calendar step, for the slot its time is. An event at no slot's
// time names no logical action, and is unattributed.
func (s *calendarSide) writes(ctx context.Context) ([]providersim.LedgerEntry, error) {
	evs, err := calsimtest.Events(ctx, s.name, s.url)
	if err != nil {
		return nil, err
	}
	var out []providersim.LedgerEntry
	for _, e := range evs {
		if e.Direct || e.Action == "" {
			continue
		}
		payload, _ := json.Marshal(map[string]string{"slot_id": s.slotAt[e.Start.UTC()]}) // strings: cannot fail
		out = append(out, providersim.LedgerEntry{Requests: 1, Write: providersim.Write{
			ID: s.name + ":" + e.ID, Capability: provider.Calendar, Operation: "appointment.book", Status: providersim.StatusCommitted,
			ExternalRef: e.Action + "/" + provider.Calendar, Payload: payload,
		}})
	}
	return out, nil
}
