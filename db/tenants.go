package db

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db/dbsqlc"
	"github.com/oncecall/oncecall/internal/schedule"
)

// APIKeyPrefix starts every API key, so keys are recognisable in secret scanners.
const APIKeyPrefix = "oc_"

// HashAPIKey is how API keys are stored and looked up.
func HashAPIKey(key string) []byte {
	sum := sha256.Sum256([]byte(key))
	return sum[:]
}

// NewTenant is a tenant to create.
type NewTenant struct {
	Name       string
	DashaOrgID string
	// Timezone is the IANA zone of the business (e.g. Europe/London), which
	// the caller has validated; empty means UTC.
	Timezone string
	// Locale is how its times are spoken; empty means the zone's default
	// (schedule.DefaultLocale).
	Locale schedule.Locale
	// Scope is the first API key's scope; empty means full.
	Scope oncecall.Scope
}

// CreateTenant creates a tenant in UTC (en-GB) and its first API key, of full
// scope; the key is returned once and only its hash is stored.
func (s *Store) CreateTenant(ctx context.Context, name, dashaOrg string) (oncecall.Tenant, string, error) {
	return s.CreateTenantWith(ctx, NewTenant{Name: name, DashaOrgID: dashaOrg})
}

// CreateTenantWith creates a tenant and its first API key, like CreateTenant.
func (s *Store) CreateTenantWith(ctx context.Context, t NewTenant) (oncecall.Tenant, string, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return oncecall.Tenant{}, "", err
	}
	var key string
	zone := cmp.Or(t.Timezone, schedule.UTC)
	err = s.InTx(ctx, func(tx *Tx) error {
		err := tx.q.CreateTenant(ctx, dbsqlc.CreateTenantParams{
			ID: id, Name: t.Name, DashaOrgID: ptr(t.DashaOrgID), Timezone: zone,
			Locale: string(cmp.Or(t.Locale, schedule.DefaultLocale(zone))),
		})
		if err != nil {
			return err
		}
		key, err = tx.AddScopedAPIKey(ctx, id, cmp.Or(t.Scope, oncecall.ScopeFull))
		return err
	})
	if err != nil {
		return oncecall.Tenant{}, "", err
	}
	return oncecall.Tenant{ID: id, Name: t.Name, DashaOrgID: t.DashaOrgID}, key, nil
}

// TenantTimezone returns the IANA zone name of a tenant.
func (q queries) TenantTimezone(ctx context.Context, tenant uuid.UUID) (string, error) {
	tz, err := q.q.TenantTimezone(ctx, tenant)
	return tz, notFound(err)
}

// TenantClock returns how a tenant says its times: its timezone and
// locale (schedule.NewClock). A zone the zone database lacks or a locale
// oncecall does not speak (possible only through SQL: oncecall checks what
// it stores) is read as UTC or en-GB, so that a caller's request is
// answered rather than failed; ok reports that neither was.
func (q queries) TenantClock(ctx context.Context, tenant uuid.UUID) (c schedule.Clock, ok bool, err error) {
	row, err := q.q.TenantClock(ctx, tenant)
	if err != nil {
		return schedule.Clock{}, false, notFound(err)
	}
	c, ok = schedule.NewClock(row.Timezone, row.Locale)
	return c, ok, nil
}

// ClockChange is a change of a tenant's timezone, locale or both; a nil
// field keeps the tenant's.
type ClockChange struct {
	Timezone *string
	Locale   *schedule.Locale
}

// UpdateTenantClock changes a tenant's timezone and locale, which the
// caller has validated, and returns both as they are now; ErrNotFound when
// there is no such tenant.
func (q queries) UpdateTenantClock(ctx context.Context, tenant uuid.UUID, c ClockChange) (zone string, locale schedule.Locale, err error) {
	p := dbsqlc.UpdateTenantClockParams{ID: tenant, Timezone: c.Timezone}
	if c.Locale != nil {
		l := string(*c.Locale)
		p.Locale = &l
	}
	row, err := q.q.UpdateTenantClock(ctx, p)
	if err != nil {
		return "", "", notFound(err)
	}
	return row.Timezone, schedule.Locale(row.Locale), nil
}

// TenantByAPIKey returns the tenant owning an unrevoked API key.
func (q queries) TenantByAPIKey(ctx context.Context, key string) (oncecall.Tenant, error) {
	t, _, err := q.APIKeyOwner(ctx, key)
	return t, err
}

// APIKeyOwner returns the tenant owning an unrevoked API key and the key's
// scope.
func (q queries) APIKeyOwner(ctx context.Context, key string) (oncecall.Tenant, oncecall.Scope, error) {
	row, err := q.q.TenantByKeyHash(ctx, HashAPIKey(key))
	if err != nil {
		return oncecall.Tenant{}, "", notFound(err)
	}
	return oncecall.Tenant{ID: row.ID, Name: row.Name, DashaOrgID: deref(row.DashaOrgID)}, oncecall.Scope(row.Scope), nil
}

// TenantByID returns a tenant.
func (q queries) TenantByID(ctx context.Context, id uuid.UUID) (oncecall.Tenant, error) {
	row, err := q.q.TenantByID(ctx, id)
	if err != nil {
		return oncecall.Tenant{}, notFound(err)
	}
	return oncecall.Tenant{ID: row.ID, Name: row.Name, DashaOrgID: deref(row.DashaOrgID)}, nil
}

// TenantByName returns the oldest tenant with that name.
func (q queries) TenantByName(ctx context.Context, name string) (oncecall.Tenant, error) {
	row, err := q.q.TenantByName(ctx, name)
	if err != nil {
		return oncecall.Tenant{}, notFound(err)
	}
	return oncecall.Tenant{ID: row.ID, Name: row.Name, DashaOrgID: deref(row.DashaOrgID)}, nil
}

// AddAPIKey creates another API key, of full scope, for a tenant and returns
// it; only its hash is stored.
func (q queries) AddAPIKey(ctx context.Context, tenant uuid.UUID) (string, error) {
	return q.AddScopedAPIKey(ctx, tenant, oncecall.ScopeFull)
}

// AddScopedAPIKey is AddAPIKey with a scope.
func (q queries) AddScopedAPIKey(ctx context.Context, tenant uuid.UUID, scope oncecall.Scope) (string, error) {
	secret := make([]byte, 24)
	if _, err := rand.Read(secret); err != nil {
		return "", err
	}
	key := APIKeyPrefix + base64.RawURLEncoding.EncodeToString(secret)
	err := q.q.CreateAPIKey(ctx, dbsqlc.CreateAPIKeyParams{KeyHash: HashAPIKey(key), TenantID: tenant, Prefix: key[:7], Scope: string(scope)})
	return key, err
}

// CallerConfirmation reports whether a tenant's voice tool calls that book,
// move, cancel or charge need the caller's confirmation (the confirmation
// gate); ErrNotFound when there is no such tenant.
func (q queries) CallerConfirmation(ctx context.Context, tenant uuid.UUID) (bool, error) {
	on, err := q.q.TenantCallerConfirmation(ctx, tenant)
	return on, notFound(err)
}

// SetCallerConfirmation turns a tenant's confirmation gate on or off;
// ErrNotFound when there is no such tenant.
func (s *Store) SetCallerConfirmation(ctx context.Context, tenant uuid.UUID, on bool) error {
	n, err := s.q.SetTenantCallerConfirmation(ctx, dbsqlc.SetTenantCallerConfirmationParams{ID: tenant, CallerConfirmation: on})
	if err == nil && n == 0 {
		return ErrNotFound
	}
	return err
}
