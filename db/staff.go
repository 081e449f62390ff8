package db

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db/dbsqlc"
)

// ErrEmailTaken is CreateOperator's answer for an e-mail address another
// person has.
var ErrEmailTaken = errors.New("another person has this e-mail address")

// NewOperator is a person to add; PasswordHash is empty for one who signs
// in by a link or through the identity provider.
type NewOperator struct {
	Name, Email  string
	Role         oncecall.Role
	TenantID     uuid.UUID
	PasswordHash string
}

// CreateOperator adds a person.
func (q queries) CreateOperator(ctx context.Context, n NewOperator) (oncecall.Operator, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return oncecall.Operator{}, err
	}
	row, err := q.q.CreateOperator(ctx, dbsqlc.CreateOperatorParams{
		ID: id, Name: n.Name, Email: n.Email, Role: string(n.Role), TenantID: ptr(n.TenantID), PasswordHash: ptr(n.PasswordHash),
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return oncecall.Operator{}, ErrEmailTaken
	}
	if err != nil {
		return oncecall.Operator{}, err
	}
	return operator(row), nil
}

// OperatorWithHash is a person and their password hash ("" for none).
type OperatorWithHash struct {
	oncecall.Operator
	PasswordHash string
}

// OperatorByEmail returns the person with a (lower-cased) e-mail address.
func (q queries) OperatorByEmail(ctx context.Context, email string) (OperatorWithHash, error) {
	row, err := q.q.OperatorByEmail(ctx, email)
	if err != nil {
		return OperatorWithHash{}, notFound(err)
	}
	return OperatorWithHash{operator(row), deref(row.PasswordHash)}, nil
}

// OperatorByID returns a person.
func (q queries) OperatorByID(ctx context.Context, id uuid.UUID) (oncecall.Operator, error) {
	row, err := q.q.OperatorByID(ctx, id)
	if err != nil {
		return oncecall.Operator{}, notFound(err)
	}
	return operator(row), nil
}

// Operators lists the staff, enabled people first, by name.
func (q queries) Operators(ctx context.Context) ([]oncecall.Operator, error) {
	rows, err := q.q.ListOperators(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]oncecall.Operator, len(rows))
	for i, r := range rows {
		out[i] = operator(r)
	}
	return out, nil
}

// SetOperatorPassword replaces an enabled person's password hash; false
// when there is no such enabled person.
func (q queries) SetOperatorPassword(ctx context.Context, id uuid.UUID, hash string) (bool, error) {
	n, err := q.q.SetOperatorPassword(ctx, dbsqlc.SetOperatorPasswordParams{ID: id, PasswordHash: &hash})
	return n == 1, err
}

// DisableOperator disables a person: their sessions stop at once, and
// they cannot sign in. False when they are disabled already or missing.
func (q queries) DisableOperator(ctx context.Context, id uuid.UUID) (bool, error) {
	n, err := q.q.DisableOperator(ctx, id)
	return n == 1, err
}

// CreateOperatorLink records a one-time sign-in link by its secret's hash.
func (q queries) CreateOperatorLink(ctx context.Context, tokenHash []byte, operator uuid.UUID, ttl time.Duration) error {
	return q.q.CreateOperatorLink(ctx, dbsqlc.CreateOperatorLinkParams{TokenHash: tokenHash, OperatorID: operator, Ttl: interval(ttl)})
}

// UseOperatorLink spends a link and returns its person; ErrNotFound when
// it is unknown, used, expired, or its person is disabled.
func (q queries) UseOperatorLink(ctx context.Context, tokenHash []byte) (uuid.UUID, error) {
	id, err := q.q.UseOperatorLink(ctx, tokenHash)
	return id, notFound(err)
}

// OperatorLinkValid reports whether a link may still be used.
func (q queries) OperatorLinkValid(ctx context.Context, tokenHash []byte) (bool, error) {
	return q.q.OperatorLinkValid(ctx, tokenHash)
}

// NewSession is a session to open: a person's (OperatorID set) or a
// break-glass one (uuid.Nil) under the name its holder gave.
type NewSession struct {
	TokenHash  []byte
	OperatorID uuid.UUID
	Name, Via  string
	TTL        time.Duration
}

// CreateOperatorSession opens a session and returns its id and when it
// expires, by the database's clock.
func (q queries) CreateOperatorSession(ctx context.Context, s NewSession) (uuid.UUID, time.Time, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.Nil, time.Time{}, err
	}
	exp, err := q.q.CreateOperatorSession(ctx, dbsqlc.CreateOperatorSessionParams{
		TokenHash: s.TokenHash, ID: id, OperatorID: ptr(s.OperatorID), Name: s.Name, Via: s.Via, Ttl: interval(s.TTL),
	})
	return id, exp, err
}

// Session is an open session with its person as they are now.
type Session struct {
	ID        uuid.UUID
	Actor     oncecall.Actor
	Email     string
	Role      oncecall.Role
	TenantID  uuid.UUID
	ExpiresAt time.Time
}

// OperatorSession returns the open session whose secret has this hash:
// ErrNotFound when there is none (unknown, expired, revoked, or its
// person disabled). A break-glass session is an admin of every tenant.
func (q queries) OperatorSession(ctx context.Context, tokenHash []byte) (Session, error) {
	r, err := q.q.OperatorSession(ctx, tokenHash)
	if err != nil {
		return Session{}, notFound(err)
	}
	s := Session{
		ID: r.ID, Actor: oncecall.Actor{OperatorID: deref(r.OperatorID), Name: r.Name, Via: r.Via},
		Email: deref(r.Email), Role: oncecall.Role(deref(r.Role)), TenantID: deref(r.OperatorTenantID), ExpiresAt: r.ExpiresAt,
	}
	if r.OperatorID == nil {
		s.Role = oncecall.RoleAdmin
	}
	return s, nil
}

// RevokeOperatorSession ends the session whose secret has this hash.
func (q queries) RevokeOperatorSession(ctx context.Context, tokenHash []byte) (bool, error) {
	n, err := q.q.RevokeOperatorSession(ctx, tokenHash)
	return n == 1, err
}

// RevokeSessionsOf ends every open session of a person and returns how many.
func (q queries) RevokeSessionsOf(ctx context.Context, operator uuid.UUID) (int64, error) {
	return q.q.RevokeSessionsOf(ctx, &operator)
}

// OpenSessionCounts counts each person's open sessions.
func (q queries) OpenSessionCounts(ctx context.Context) (map[uuid.UUID]int64, error) {
	rows, err := q.q.OpenSessionCounts(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[uuid.UUID]int64, len(rows))
	for _, r := range rows {
		out[deref(r.OperatorID)] = r.N
	}
	return out, nil
}

// AddAudit appends to the audit trail; detail is marshalled to a JSON
// object.
func (q queries) AddAudit(ctx context.Context, e oncecall.AuditEntry, detail any) error {
	b := []byte("{}")
	if detail != nil {
		var err error
		if b, err = json.Marshal(detail); err != nil {
			return err
		}
	}
	return q.q.AddAudit(ctx, dbsqlc.AddAuditParams{
		OperatorID: ptr(e.Actor.OperatorID), OperatorName: e.Actor.Name, Via: e.Actor.Via,
		TenantID: ptr(e.TenantID), ActionID: ptr(e.ActionID), Kind: e.Kind, Detail: b,
	})
}

// AuditFilter selects audit entries; zero fields select everything.
type AuditFilter struct {
	TenantID, ActionID, OperatorID uuid.UUID
	OperatorName, Kind             string
	Since, Until                   time.Time
	BeforeID                       int64
	Limit                          int
}

// Audit lists audit entries under f, newest first.
func (q queries) Audit(ctx context.Context, f AuditFilter) ([]oncecall.AuditEntry, error) {
	rows, err := q.q.ListAudit(ctx, dbsqlc.ListAuditParams{
		TenantID: ptr(f.TenantID), ActionID: ptr(f.ActionID), OperatorID: ptr(f.OperatorID),
		OperatorName: ptr(f.OperatorName), Kind: ptr(f.Kind), Since: optionalTime(f.Since), Until: optionalTime(f.Until),
		BeforeID: ptr(f.BeforeID), MaxRows: int32(f.Limit),
	})
	if err != nil {
		return nil, err
	}
	out := make([]oncecall.AuditEntry, len(rows))
	for i, r := range rows {
		out[i] = oncecall.AuditEntry{
			ID: r.ID, At: r.At, Actor: oncecall.Actor{OperatorID: deref(r.OperatorID), Name: r.OperatorName, Via: r.Via},
			TenantID: deref(r.TenantID), ActionID: deref(r.ActionID), Kind: r.Kind, Detail: r.Detail,
		}
	}
	return out, nil
}

func operator(r dbsqlc.Operator) oncecall.Operator {
	return oncecall.Operator{
		ID: r.ID, Name: r.Name, Email: r.Email, Role: oncecall.Role(r.Role), TenantID: deref(r.TenantID),
		HasPassword: r.PasswordHash != nil, CreatedAt: r.CreatedAt, DisabledAt: deref(r.DisabledAt),
	}
}

// FollowUp is a follow-up call marked done.
type FollowUp struct {
	TenantID  uuid.UUID
	Kind      string // action or callback
	SubjectID uuid.UUID
	Actor     oncecall.Actor
	Note      string
	DoneAt    time.Time
}

// MarkFollowUpDone records a follow-up call done and audits it; false when
// it was marked done already (by anyone).
func (s *Store) MarkFollowUpDone(ctx context.Context, f FollowUp) (bool, error) {
	var done bool
	err := s.InTx(ctx, func(tx *Tx) error {
		n, err := tx.q.MarkFollowUpDone(ctx, dbsqlc.MarkFollowUpDoneParams{
			TenantID: f.TenantID, Kind: f.Kind, SubjectID: f.SubjectID, OperatorID: ptr(f.Actor.OperatorID),
			OperatorName: f.Actor.Name, Via: f.Actor.Via, Note: f.Note,
		})
		if err != nil || n == 0 {
			return err
		}
		done = true
		e := oncecall.AuditEntry{Actor: f.Actor, TenantID: f.TenantID, Kind: "follow_up_done"}
		detail := map[string]string{"task": f.Kind, "note": f.Note}
		if f.Kind == "action" {
			e.ActionID = f.SubjectID
		} else {
			detail["callback_id"] = f.SubjectID.String()
		}
		return tx.AddAudit(ctx, e, detail)
	})
	return done, err
}

// FollowUpsDone returns the follow-ups of the given subjects marked done,
// by subject.
func (q queries) FollowUpsDone(ctx context.Context, tenants, subjects []uuid.UUID) (map[uuid.UUID]FollowUp, error) {
	rows, err := q.q.FollowUpsDone(ctx, dbsqlc.FollowUpsDoneParams{TenantIds: tenants, SubjectIds: subjects})
	if err != nil {
		return nil, err
	}
	out := make(map[uuid.UUID]FollowUp, len(rows))
	for _, r := range rows {
		out[r.SubjectID] = followUp(r)
	}
	return out, nil
}

// RecentFollowUpsDone lists the follow-ups marked done within since, newest
// first.
func (q queries) RecentFollowUpsDone(ctx context.Context, tenants []uuid.UUID, since time.Duration) ([]FollowUp, error) {
	rows, err := q.q.RecentFollowUpsDone(ctx, dbsqlc.RecentFollowUpsDoneParams{TenantIds: tenants, Since: interval(since)})
	if err != nil {
		return nil, err
	}
	out := make([]FollowUp, len(rows))
	for i, r := range rows {
		out[i] = followUp(r)
	}
	return out, nil
}

func followUp(r dbsqlc.FollowUpsDone) FollowUp {
	return FollowUp{
		TenantID: r.TenantID, Kind: r.Kind, SubjectID: r.SubjectID, Note: r.Note, DoneAt: r.DoneAt,
		Actor: oncecall.Actor{OperatorID: deref(r.OperatorID), Name: r.OperatorName, Via: r.Via},
	}
}

// OpenCallback is a requested callback not marked done, with the
// customer to call.
type OpenCallback struct {
	oncecall.Callback
	ActionID      uuid.UUID
	CustomerName  string
	CustomerPhone string
}

// OpenCallbacks lists the requested callbacks not marked done whose window
// ended at most since ago, soonest first.
func (q queries) OpenCallbacks(ctx context.Context, tenants []uuid.UUID, since time.Duration) ([]OpenCallback, error) {
	rows, err := q.q.OpenCallbacks(ctx, dbsqlc.OpenCallbacksParams{TenantIds: tenants, Since: interval(since)})
	if err != nil {
		return nil, err
	}
	out := make([]OpenCallback, len(rows))
	for i, r := range rows {
		out[i] = OpenCallback{
			Callback: oncecall.Callback{
				ID: r.ID, TenantID: r.TenantID, CustomerID: deref(r.CustomerID), Phone: deref(r.Phone),
				WindowStart: r.WindowStart, WindowEnd: r.WindowEnd, Timezone: r.Timezone, Reason: r.Reason,
			},
			ActionID: r.ActionID, CustomerName: deref(r.CustomerName), CustomerPhone: deref(r.CustomerPhone),
		}
	}
	return out, nil
}

// CallbackTenant returns the tenant of a callback.
func (q queries) CallbackTenant(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	t, err := q.q.CallbackTenant(ctx, id)
	return t, notFound(err)
}
