package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/oncecall/oncecall/db"
)

// demoTenant is the tenant the embedded mode prepares for a first look.
const demoTenant = "demo"

// SeedDemo makes sure the demo tenant has a customer and some free future
// slots, gives it a fresh API key and prints a curl command that books one.
func (m *Main) SeedDemo(ctx context.Context, out io.Writer) error {
	s := m.store
	t, err := s.TenantByName(ctx, demoTenant)
	var key string
	switch {
	case errors.Is(err, db.ErrNotFound):
		t, key, err = s.CreateTenant(ctx, demoTenant, "")
	case err == nil:
		key, err = s.AddAPIKey(ctx, t.ID)
	}
	if err != nil {
		return fmt.Errorf("demo tenant: %w", err)
	}
	c, err := s.CustomerByExternalRef(ctx, t.ID, "demo-customer")
	if errors.Is(err, db.ErrNotFound) {
		c, err = s.CreateCustomer(ctx, db.NewCustomer{TenantID: t.ID, Name: "Demo Customer", ExternalRef: "demo-customer"})
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
	free, err = s.ListSlots(ctx, t.ID, db.SlotFilter{From: time.Now(), OnlyAvailable: true, Limit: 1})
	if err != nil || len(free) == 0 {
		return fmt.Errorf("demo slots: %v", err)
	}
	base := "http://" + m.cfg.Addr
	if m.ln != nil {
		base = "http://" + displayAddr(m.Addr())
	}
	fmt.Fprintf(out, `
oncecall is running at %[1]s with an embedded PostgreSQL.
Demo tenant API key (shown once): %[2]s

Book a slot (run it twice: the second answer is the same, with Idempotent-Replayed: true):

curl -i -X POST %[1]s/v1/appointments \
  -H 'Authorization: Bearer %[2]s' \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: demo-book-%[4]s' \
  -d '{"customer_id":"%[3]s","slot_id":"%[4]s"}'

Or book it as a Dasha BlackBox tool call instead (run it twice, or with another callId: still one booking):

curl -s -X POST %[1]s/v1/dasha/tools/book_appointment \
  -H 'Authorization: Bearer %[2]s' \
  -H 'Content-Type: application/json' \
  -d '{"type":"ToolWebHookPayload","status":"Running","callId":"call_abc123","agentId":"agent_xyz789","orgId":"org_123","toolName":"book_appointment","arguments":{"customer_id":"%[3]s","slot_id":"%[4]s"},"callAdditionalData":{},"agentAdditionalData":{}}'

`, base, key, c.ID, free[0].ID)
	return nil
}
