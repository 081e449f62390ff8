package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
)

// Demo fixtures: the tenant, and the customer's reference and phone (a
// number reserved for fiction, so the SMS example goes nowhere real).
const (
	demoTenant      = "demo"
	demoCustomerRef = "demo-customer"
	demoPhone       = "+15555550123"
)

// demoKeyFile holds the demo tenant's API key in the embedded database's
// data directory, readable by its owner only, so that a restart of `make
// run` prints the same key again. The database stores only the key's hash.
const demoKeyFile = "demo-api-key"

// SeedDemo makes sure the demo tenant has a customer with a phone and some
// free future slots and an API key, and prints what to try: the shell
// variables README's tour uses, where payments and messages go (the
// provider simulator, when this process runs it), a REST booking, a Dasha
// tool call booking another slot, an SMS, how to create a tenant against
// the embedded database, the console and how to add its first admin, how to change the port and how to start afresh. self is how a
// person runs oncecall from the same place (e.g. "bin/oncecall").
//
// With the embedded database the key is kept in demoKeyFile and reused
// while it still opens the demo tenant; otherwise every call adds a key.
func (m *Main) SeedDemo(ctx context.Context, out io.Writer, self string) error {
	s := m.store
	t, err := s.TenantByName(ctx, demoTenant)
	var key string
	switch {
	case errors.Is(err, db.ErrNotFound):
		t, key, err = s.CreateTenant(ctx, demoTenant, "")
	case err == nil:
		key, err = m.demoKey(ctx, t)
	}
	if err != nil {
		return fmt.Errorf("demo tenant: %w", err)
	}
	keyNote := "a new key at every start"
	if m.pg != nil {
		path := filepath.Join(m.dataDir(), demoKeyFile)
		if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
			return fmt.Errorf("keep the demo key: %w", err)
		}
		if err := os.Chmod(path, 0o600); err != nil { // an older file keeps its mode otherwise
			return fmt.Errorf("keep the demo key: %w", err)
		}
		keyNote = "the same at every start; kept in " + path + ", readable by you only"
	}
	c, err := s.CustomerByExternalRef(ctx, t.ID, demoCustomerRef)
	switch {
	case errors.Is(err, db.ErrNotFound):
		c, err = s.CreateCustomer(ctx, db.NewCustomer{TenantID: t.ID, Name: "Demo Customer", Phone: demoPhone, ExternalRef: demoCustomerRef})
	case err == nil && c.Phone == "":
		// Demo data from an older version had no phone.
		c, err = s.UpdateCustomer(ctx, db.CustomerChange{TenantID: t.ID, ID: c.ID, Phone: db.FieldChange{Set: true, Value: demoPhone}})
	}
	if err != nil {
		return fmt.Errorf("demo customer: %w", err)
	}
	free, err := s.ListSlots(ctx, t.ID, db.SlotFilter{From: time.Now(), OnlyAvailable: true, Limit: 5})
	if err != nil {
		return err
	}
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
	for i := len(free); i < 5; i++ {
		start := day.Add(time.Duration(9+i) * time.Hour)
		if _, err := s.CreateSlot(ctx, db.NewSlot{TenantID: t.ID, StartsAt: start, EndsAt: start.Add(time.Hour), Resource: "demo"}); err != nil {
			return fmt.Errorf("demo slot: %w", err)
		}
		day = day.AddDate(0, 0, 1)
	}
	// Two free slots: the REST example books one, the Dasha example the other.
	free, err = s.ListSlots(ctx, t.ID, db.SlotFilter{From: time.Now(), OnlyAvailable: true, Limit: 2})
	if err != nil || len(free) < 2 {
		return fmt.Errorf("demo slots: %d free, %v", len(free), err)
	}
	if err := seedDemoCatalog(ctx, s, t); err != nil {
		return err
	}
	portNote := "its port changes at every start; ONCECALL_EMBEDDED_PORT fixes it"
	if m.cfg.EmbeddedPort != 0 {
		portNote = "its port is ONCECALL_EMBEDDED_PORT's"
	}
	base := "http://" + m.cfg.Addr
	if m.ln != nil {
		base = "http://" + displayAddr(m.Addr())
	}
	dataDir := m.dataDir()
	simNote := "Payments and messages have no provider: a charge is refused (PAYMENTS_NOT_CONFIGURED) and a message is\nonly recorded in the messages table for the team."
	if url, caps := m.Simulator(); url != "" {
		simNote = fmt.Sprintf("%s go to the provider simulator at %s, which plays the processor and the SMS\n"+
			"gateway in this process: nothing real is charged or sent (its ledger: curl %s/ledger).", strings.Join(caps, " and "), url, url)
	}
	fmt.Fprintf(out, `
oncecall is running at %[1]s with an embedded PostgreSQL.
Demo tenant API key (%[10]s): %[2]s
%[12]s

For README's tour, paste these into your shell:

export URL=%[1]s
export KEY=%[2]s
export CUSTOMER_ID=%[3]s

Book a slot (run it twice: the second answer is the same, with Idempotent-Replayed: true):

curl -i -X POST %[1]s/v1/appointments \
  -H 'Authorization: Bearer %[2]s' \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: demo-book-%[4]s' \
  -d '{"customer_id":"%[3]s","slot_id":"%[4]s"}'

Book another slot as a Dasha BlackBox tool call (run it twice, or with another callId: still one booking):

curl -s -X POST %[1]s/v1/dasha/tools/book_appointment \
  -H 'Authorization: Bearer %[2]s' \
  -H 'Content-Type: application/json' \
  -d '{"type":"ToolWebHookPayload","status":"Running","callId":"call_%[5]s","agentId":"agent_xyz789","orgId":"org_123","toolName":"book_appointment","arguments":{"customer_id":"%[3]s","slot_id":"%[5]s"},"callAdditionalData":{},"agentAdditionalData":{}}'

Send the demo customer an SMS reminder (run it twice: one message):

curl -i -X POST %[1]s/v1/messages \
  -H 'Authorization: Bearer %[2]s' \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: demo-sms-%[4]s' \
  -d '{"customer_id":"%[3]s","channel":"sms","template":"appointment_reminder","variables":{"name":"Demo Customer","when":"%[6]s"}}'

The embedded database, while this server runs (%[11]s):

DATABASE_URL='%[7]s' %[8]s tenant create --name acme

creates another tenant and prints its API key once (add --scope dasha for a key that may call only the Dasha webhooks).

The operator console, where staff settle what waits for a person: %[1]s/console/
Add its first admin; the command prints a one-time sign-in link to open in a browser:

DATABASE_URL='%[7]s' %[8]s operator add --name "Your Name" --email you@clinic.example --role admin --base-url %[1]s

Another port: ONCECALL_ADDR=127.0.0.1:9090 make run. Start afresh: stop the server, then rm -rf %[9]s
Ctrl-C stops the server and its database.

`, base, key, c.ID, free[0].ID, free[1].ID, free[0].StartsAt.Format("Monday 2 January at 15:04 MST"), m.dbURL, self, dataDir, keyNote, portNote, simNote)
	return nil
}

// demoKey returns the kept demo key while it still opens tenant t with the
// full scope, else a new key of t.
func (m *Main) demoKey(ctx context.Context, t oncecall.Tenant) (string, error) {
	if m.pg != nil {
		b, err := os.ReadFile(filepath.Join(m.dataDir(), demoKeyFile))
		if err == nil {
			key := strings.TrimSpace(string(b))
			owner, scope, err := m.store.APIKeyOwner(ctx, key)
			if err == nil && owner.ID == t.ID && scope == oncecall.ScopeFull {
				return key, nil
			}
			if err != nil && !errors.Is(err, db.ErrNotFound) {
				return "", err
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("read the demo key: %w", err)
		}
	}
	return m.store.AddAPIKey(ctx, t.ID)
}

// dataDir is the absolute data directory of the embedded database.
func (m *Main) dataDir() string {
	dir, err := filepath.Abs(cmp.Or(m.cfg.DataDir, ".oncecall"))
	if err != nil {
		return cmp.Or(m.cfg.DataDir, ".oncecall")
	}
	return dir
}
