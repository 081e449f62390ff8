package chaos

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall/db"
)

// seedCalls writes w's tenants and everything the scripts expect to find
// into the database: each tenant (bound to its Dasha org, in its zone,
// with its Retell key), its location, service and practitioners, every
// slot, the returning callers with their balance, bookings and approved
// payments. Tenants go through the store (their keys are hashed there);
// the rest is copied in bulk with the ids the seed drew.
func seedCalls(ctx context.Context, store *db.Store, w *callWorld) error {
	pool := store.Pool()
	copyRows := func(table string, cols []string, rows [][]any) error {
		if len(rows) == 0 {
			return nil
		}
		_, err := pool.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows))
		if err != nil {
			return fmt.Errorf("seed %s: %w", table, err)
		}
		return nil
	}
	var locations, services, practitioners, practitionerLocations, practitionerServices [][]any
	for _, t := range w.Tenants {
		tenant, key, err := store.CreateTenantWith(ctx, db.NewTenant{Name: fmt.Sprintf("chaos-calls-%d", t.N), DashaOrgID: t.Org, Timezone: t.Zone})
		if err != nil {
			return fmt.Errorf("seed tenant %d: %w", t.N, err)
		}
		t.ID, t.Key = tenant.ID.String(), key
		if err := store.SetRetellKey(ctx, tenant.ID, t.RetellKey); err != nil {
			return fmt.Errorf("seed the Retell key of tenant %d: %w", t.N, err)
		}
		locations = append(locations, []any{uuid.MustParse(t.Location), tenant.ID, "Main Street", t.Zone})
		services = append(services, []any{uuid.MustParse(t.Service), tenant.ID, "Check-up", 60})
		for i, p := range t.Practitioners {
			id := uuid.MustParse(p)
			practitioners = append(practitioners, []any{id, tenant.ID, fmt.Sprintf("Dr. %c", 'A'+i)})
			practitionerLocations = append(practitionerLocations, []any{tenant.ID, id, uuid.MustParse(t.Location)})
			practitionerServices = append(practitionerServices, []any{tenant.ID, id, uuid.MustParse(t.Service)})
		}
	}
	tenantID := func(t *callTenant) uuid.UUID { return uuid.MustParse(t.ID) }
	if err := copyRows("locations", []string{"id", "tenant_id", "name", "timezone"}, locations); err != nil {
		return err
	}
	if err := copyRows("services", []string{"id", "tenant_id", "name", "duration_minutes"}, services); err != nil {
		return err
	}
	if err := copyRows("practitioners", []string{"id", "tenant_id", "name"}, practitioners); err != nil {
		return err
	}
	if err := copyRows("practitioner_locations", []string{"tenant_id", "practitioner_id", "location_id"}, practitionerLocations); err != nil {
		return err
	}
	if err := copyRows("practitioner_services", []string{"tenant_id", "practitioner_id", "service_id"}, practitionerServices); err != nil {
		return err
	}

	var rows [][]any
	for _, id := range sortedKeys(w.Slots) {
		s := w.Slots[id]
		rows = append(rows, []any{
			uuid.MustParse(s.ID), tenantID(s.Tenant), s.Start, s.Start.Add(slotLength), fmt.Sprintf("Dr. %c", 'A'+s.Who),
			uuid.MustParse(s.Tenant.Practitioners[s.Who]), uuid.MustParse(s.Tenant.Location),
		})
	}
	if err := copyRows("slots", []string{"id", "tenant_id", "starts_at", "ends_at", "resource", "practitioner_id", "location_id"}, rows); err != nil {
		return err
	}
	rows = nil
	for _, id := range sortedKeys(w.People) {
		p := w.People[id]
		rows = append(rows, []any{uuid.MustParse(p.ID), tenantID(p.Tenant), p.Name, p.Phone, p.Points})
	}
	if err := copyRows("customers", []string{"id", "tenant_id", "name", "phone", "points"}, rows); err != nil {
		return err
	}
	rows = nil
	for _, id := range sortedKeys(w.Appointments) {
		b := w.Appointments[id]
		rows = append(rows, []any{uuid.MustParse(b.ID), tenantID(b.Person.Tenant), uuid.MustParse(b.Person.ID), uuid.MustParse(b.Slot.ID), uuid.New()})
	}
	if err := copyRows("appointments", []string{"id", "tenant_id", "customer_id", "slot_id", "action_id"}, rows); err != nil {
		return err
	}
	rows = nil
	for _, id := range sortedKeys(w.Intents) {
		pi := w.Intents[id]
		rows = append(rows, []any{uuid.MustParse(pi.ID), tenantID(pi.Person.Tenant), uuid.MustParse(pi.Person.ID), pi.Amount, "EUR", "pm_card_ok", uuid.New()})
	}
	return copyRows("payment_intents", []string{"id", "tenant_id", "customer_id", "amount", "currency", "payment_method", "action_id"}, rows)
}

// slotLength is every slot's length, the service's duration.
const slotLength = time.Hour

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
