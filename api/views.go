package api

import (
	"context"

	"github.com/google/uuid"
)

// viewed turns a lookup of a domain record into a lookup of its wire shape
// (package wire), which is what getRecord writes.
func viewed[T, V any](find func(ctx context.Context, tenant, id uuid.UUID) (T, error), view func(T) V) func(ctx context.Context, tenant, id uuid.UUID) (V, error) {
	return func(ctx context.Context, tenant, id uuid.UUID) (V, error) {
		v, err := find(ctx, tenant, id)
		if err != nil {
			var zero V
			return zero, err
		}
		return view(v), nil
	}
}
