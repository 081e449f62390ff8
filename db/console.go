package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db/dbsqlc"
	"github.com/oncecall/oncecall/internal/schedule"
)

// QueueFilter selects the operator console's queue: the actions flagged
// needs_operator and the unfinished ones, oldest first.
type QueueFilter struct {
	Tenant    *uuid.UUID
	Operation string
	// State is needs_operator, running or unknown; empty for all.
	State string
	// MinAge keeps only actions at least this old; CreatedBefore, when
	// set, only those claimed by then.
	MinAge        time.Duration
	CreatedBefore time.Time
	// Provider keeps actions with a step planned for this provider kind
	// (http, stripe, twilio, ...); Error those with a step whose last
	// error contains this text (in any case).
	Provider, Error string
	Limit           int
}

// Queue returns the console's queue under f.
func (q queries) Queue(ctx context.Context, f QueueFilter) ([]oncecall.Action, error) {
	rows, err := q.q.ConsoleQueue(ctx, dbsqlc.ConsoleQueueParams{
		TenantID: f.Tenant, Operation: ptr(f.Operation), QueueState: ptr(f.State),
		MinAgeSeconds: f.MinAge.Seconds(), CreatedBefore: optionalTime(f.CreatedBefore),
		Provider: ptr(f.Provider), Error: ptr(f.Error), MaxRows: int32(f.Limit),
	})
	return actions(rows, err)
}

// QueueCounts counts the queue by state (needs_operator, running,
// unknown) under f but its state.
func (q queries) QueueCounts(ctx context.Context, f QueueFilter) (map[string]int64, error) {
	rows, err := q.q.ConsoleQueueCounts(ctx, dbsqlc.ConsoleQueueCountsParams{
		TenantID: f.Tenant, Operation: ptr(f.Operation), MinAgeSeconds: f.MinAge.Seconds(),
		CreatedBefore: optionalTime(f.CreatedBefore), Provider: ptr(f.Provider), Error: ptr(f.Error),
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.QueueState] = r.N
	}
	return out, nil
}

// ConsoleTenant is a tenant as the console shows it: its name, and the
// clock its times are shown on.
type ConsoleTenant struct {
	oncecall.Tenant
	Clock schedule.Clock
}

// Tenants lists tenants by name (at most 1000), for the console's filters
// and names.
func (q queries) Tenants(ctx context.Context) ([]ConsoleTenant, error) {
	rows, err := q.q.ConsoleTenants(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ConsoleTenant, len(rows))
	for i, r := range rows {
		clock, _ := schedule.NewClock(r.Timezone, r.Locale)
		out[i] = ConsoleTenant{Tenant: oncecall.Tenant{ID: r.ID, Name: r.Name}, Clock: clock}
	}
	return out, nil
}

// TenantIDs lists every tenant's id.
func (q queries) TenantIDs(ctx context.Context) ([]uuid.UUID, error) {
	return q.q.ConsoleTenantIDs(ctx)
}

// Search terms of actions (migration 0034, action_search_terms): what a
// request names, a voice call's id, an idempotency key's key_hash.
func SubjectTerm(v string) string { return "s:" + v }

// CallTerm is the search term of a voice call's id.
func CallTerm(id string) string { return "c:" + id }

// KeyTerm is the search term of a key_hash.
func KeyTerm(hash string) string { return "k:" + hash }

// SearchActions finds the actions of the given tenants with any of terms,
// newest first.
func (q queries) SearchActions(ctx context.Context, tenants []uuid.UUID, terms []string, limit int) ([]oncecall.Action, error) {
	rows, err := q.q.SearchActions(ctx, dbsqlc.SearchActionsParams{Terms: terms, TenantIds: tenants, MaxRows: int32(limit)})
	out := make([]dbsqlc.Action, len(rows))
	for i, r := range rows {
		out[i] = dbsqlc.Action(r) // the same columns, read from the CTE
	}
	return actions(out, err)
}

// ActionsOfProviderRef finds the actions of the given tenants with a step
// holding a provider's reference.
func (q queries) ActionsOfProviderRef(ctx context.Context, tenants []uuid.UUID, ref string) ([]oncecall.Action, error) {
	return actions(q.q.ActionsOfProviderRef(ctx, dbsqlc.ActionsOfProviderRefParams{ProviderRef: ref, TenantIds: tenants}))
}

// CustomerQuery is what a search looks customers up by; empty fields look
// for nothing.
type CustomerQuery struct {
	IDs          []uuid.UUID
	Phone, Email string
	// Words is a to_tsquery('simple') of the words of a name as prefixes
	// ("mar:* & lop:*"), built only of letters and digits.
	Words string
}

// SearchCustomers finds customers of the given tenants.
func (q queries) SearchCustomers(ctx context.Context, tenants []uuid.UUID, c CustomerQuery) ([]oncecall.Customer, []uuid.UUID, error) {
	ids := c.IDs
	if ids == nil {
		ids = []uuid.UUID{}
	}
	rows, err := q.q.SearchCustomers(ctx, dbsqlc.SearchCustomersParams{
		TenantIds: tenants, Ids: ids, Phone: c.Phone, Email: c.Email, Words: c.Words,
	})
	if err != nil {
		return nil, nil, err
	}
	out, of := make([]oncecall.Customer, len(rows)), make([]uuid.UUID, len(rows))
	for i, r := range rows {
		out[i], of[i] = oncecall.Customer{ID: r.ID, Name: r.Name, Phone: deref(r.Phone), Email: deref(r.Email)}, r.TenantID
	}
	return out, of, nil
}

// CustomerLinks lists the ids of a customer's appointments, payment
// intents and callbacks: what her actions name instead of her.
func (q queries) CustomerLinks(ctx context.Context, tenant, customer uuid.UUID) ([]string, error) {
	return q.q.CustomerLinks(ctx, dbsqlc.CustomerLinksParams{TenantID: tenant, CustomerID: customer})
}

// CallbacksToPhone lists the ids of the callbacks to a phone number.
func (q queries) CallbacksToPhone(ctx context.Context, tenants []uuid.UUID, phone string) ([]string, error) {
	return q.q.CallbacksToPhone(ctx, dbsqlc.CallbacksToPhoneParams{TenantIds: tenants, Phone: phone})
}

func actions(rows []dbsqlc.Action, err error) ([]oncecall.Action, error) {
	if err != nil {
		return nil, err
	}
	out := make([]oncecall.Action, len(rows))
	for i, r := range rows {
		out[i] = action(r)
	}
	return out, nil
}
