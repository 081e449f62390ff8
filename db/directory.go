package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Placement is where a tenant lives when oncecall runs over several
// PostgreSQL clusters (docs/scaling.md#tenants-across-clusters): the
// cluster's name ("" is the home cluster) and, while it moves, how long its
// requests are still paused.
type Placement struct {
	Cluster string
	// Paused is how long the tenant's requests stay paused from the read;
	// zero when they are not.
	Paused time.Duration
}

// Directory reads the directory of tenants (table tenant_directory, kept in
// the home cluster): every tenant that lives on another cluster or is
// paused. A tenant it does not name lives in the home cluster.
func (s *Store) Directory(ctx context.Context) (map[uuid.UUID]Placement, error) {
	rows, err := s.pool.Query(ctx, `SELECT tenant_id, cluster,
		GREATEST(COALESCE(EXTRACT(EPOCH FROM paused_until - now()), 0), 0)::float8
		FROM tenant_directory WHERE cluster <> '' OR paused_until > now()`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[uuid.UUID]Placement{}
	for rows.Next() {
		var id uuid.UUID
		var p Placement
		var secs float64
		if err := rows.Scan(&id, &p.Cluster, &secs); err != nil {
			return nil, err
		}
		p.Paused = time.Duration(secs * float64(time.Second))
		out[id] = p
	}
	return out, rows.Err()
}

// TenantCluster is the cluster the directory places the tenant on ("" is
// the home cluster).
func (s *Store) TenantCluster(ctx context.Context, tenant uuid.UUID) (string, error) {
	var cluster string
	err := s.pool.QueryRow(ctx, `SELECT cluster FROM tenant_directory WHERE tenant_id = $1`, tenant).Scan(&cluster)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return cluster, err
}

// ErrAlreadyPaused is PauseTenant's answer for a tenant that is paused
// already: another move of it is under way.
var ErrAlreadyPaused = errors.New("the tenant is paused already: another move of it is under way")

// PauseTenant pauses the tenant's requests for at most d and returns the
// pause's deadline (the database's clock), which UnpauseTenant and
// SwitchTenant name, and the cluster the tenant lives on.
func (s *Store) PauseTenant(ctx context.Context, tenant uuid.UUID, d time.Duration) (time.Time, string, error) {
	var until time.Time
	var cluster string
	err := s.pool.QueryRow(ctx, `INSERT INTO tenant_directory (tenant_id, paused_until)
		VALUES ($1, now() + make_interval(secs => $2))
		ON CONFLICT (tenant_id) DO UPDATE SET paused_until = EXCLUDED.paused_until, updated_at = now()
		WHERE tenant_directory.paused_until IS NULL OR tenant_directory.paused_until <= now()
		RETURNING paused_until, cluster`, tenant, d.Seconds()).Scan(&until, &cluster)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, "", ErrAlreadyPaused
	}
	if err != nil {
		return time.Time{}, "", fmt.Errorf("pause the tenant: %w", err)
	}
	return until, cluster, nil
}

// UnpauseTenant ends the pause whose deadline is until, leaving the tenant
// where it was.
func (s *Store) UnpauseTenant(ctx context.Context, tenant uuid.UUID, until time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE tenant_directory SET paused_until = NULL, updated_at = now()
		WHERE tenant_id = $1 AND paused_until = $2`, tenant, until)
	return err
}

// ErrPauseOver is SwitchTenant's answer when the pause it names has ended:
// the tenant's requests may have been served again where it was.
var ErrPauseOver = errors.New("the tenant's pause ended before the switch")

// SwitchTenant places the tenant on cluster and ends its pause, only if the
// pause whose deadline is until still holds.
func (s *Store) SwitchTenant(ctx context.Context, tenant uuid.UUID, until time.Time, cluster string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE tenant_directory SET cluster = $3, paused_until = NULL, updated_at = now()
		WHERE tenant_id = $1 AND paused_until = $2 AND paused_until > now()`, tenant, until, cluster)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return ErrPauseOver
	}
	return nil
}
