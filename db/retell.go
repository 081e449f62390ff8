package db

import (
	"context"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db/dbsqlc"
)

// RetellKey returns the tenant's Retell API key, or ErrNotFound when it has
// none (its Retell calls are then authenticated by the Bearer key alone).
func (q queries) RetellKey(ctx context.Context, tenant uuid.UUID) (string, error) {
	k, err := q.q.RetellKey(ctx, tenant)
	return k, notFound(err)
}

// SetRetellKey sets the tenant's Retell API key, replacing any earlier one.
func (q queries) SetRetellKey(ctx context.Context, tenant uuid.UUID, key string) error {
	return q.q.SetRetellKey(ctx, dbsqlc.SetRetellKeyParams{TenantID: tenant, ApiKey: key})
}

// DeleteRetellKey removes the tenant's Retell API key and reports whether
// it had one.
func (q queries) DeleteRetellKey(ctx context.Context, tenant uuid.UUID) (bool, error) {
	n, err := q.q.DeleteRetellKey(ctx, tenant)
	return n > 0, err
}
