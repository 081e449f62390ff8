// Package staff owns the named staff of the operator console: adding a
// person with a role (and optionally one tenant), their passwords (bcrypt
// from golang.org/x/crypto, weak ones refused with zxcvbn's estimate),
// one-time sign-in links, sign-in throttled per account and per address,
// and server-side sessions that signing out or an admin ends on every
// replica at once. The console and the command line both use it; it
// knows nothing of HTTP.
package staff

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/trustelem/zxcvbn"
	"golang.org/x/crypto/bcrypt"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/tokenguard"
)

// Config configures the staff service.
type Config struct {
	Store *db.Store
	// SessionTTL is how long a sign-in lasts. Default 8h.
	SessionTTL time.Duration
	// LinkTTL is how long a one-time sign-in link may be used. Default 72h.
	LinkTTL time.Duration
	// Cost is bcrypt's cost. Default 12.
	Cost int
	// Throttle slows down guessing passwords (default: one of its own with
	// tokenguard's defaults).
	Throttle *tokenguard.Throttle
}

// Staff is the staff service.
type Staff struct {
	cfg Config
	// dummy is a hash compared when no account matches, so that the time
	// tells nothing; made at the first sign-in.
	dummy     []byte
	dummyOnce sync.Once
}

// New returns the staff service.
func New(cfg Config) *Staff {
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 8 * time.Hour
	}
	if cfg.LinkTTL <= 0 {
		cfg.LinkTTL = 72 * time.Hour
	}
	if cfg.Cost == 0 {
		cfg.Cost = 12
	}
	if cfg.Throttle == nil {
		cfg.Throttle = tokenguard.NewThrottle(tokenguard.ThrottleConfig{})
	}
	if cfg.Cost < bcrypt.MinCost || cfg.Cost > bcrypt.MaxCost {
		panic(fmt.Sprintf("staff: bcrypt cost %d is not from %d to %d", cfg.Cost, bcrypt.MinCost, bcrypt.MaxCost))
	}
	return &Staff{cfg: cfg}
}

// SessionTTL is how long a sign-in lasts.
func (s *Staff) SessionTTL() time.Duration { return s.cfg.SessionTTL }

// Person is someone to add to the staff.
type Person struct {
	Name, Email string
	Role        oncecall.Role
	// TenantID limits the person to one tenant; uuid.Nil: every tenant.
	TenantID uuid.UUID
	// Password is the initial password; empty: the person gets a one-time
	// sign-in link instead (or signs in through the identity provider).
	Password string
}

// MinPasswordLen is the shortest password accepted; MaxPasswordLen is
// bcrypt's limit, in bytes.
const (
	MinPasswordLen = 12
	MaxPasswordLen = 72
)

// CheckPassword refuses a weak password: shorter than MinPasswordLen
// characters, longer than bcrypt's 72 bytes, or one zxcvbn estimates
// guessable (score under 3 of 4; it knows common passwords, words, names,
// keyboard patterns and dates, and the person's own name and e-mail given
// as inputs). The error says why, never the password.
func CheckPassword(password string, inputs ...string) error {
	switch {
	case utf8.RuneCountInString(password) < MinPasswordLen:
		return fault.Field("password", "must be at least %d characters", MinPasswordLen)
	case len(password) > MaxPasswordLen:
		return fault.Field("password", "must be at most %d bytes", MaxPasswordLen)
	}
	var words []string
	for _, in := range inputs {
		words = append(words, strings.FieldsFunc(strings.ToLower(in), func(r rune) bool {
			return r == ' ' || r == '@' || r == '.' || r == '-' || r == '_'
		})...)
	}
	words = append(words, "oncecall", "console", "operator", "clinic")
	// What is left without the person's own name and address must be
	// strong on its own: "ana.ruiz.2026" is "..2026" to someone who knows Ana.
	rest := strings.ToLower(password)
	for _, w := range words {
		if utf8.RuneCountInString(w) >= 3 {
			rest = strings.ReplaceAll(rest, w, "")
		}
	}
	if zxcvbn.PasswordStrength(password, words).Score < 3 || zxcvbn.PasswordStrength(rest, nil).Score < 3 {
		return fault.Field("password", "is too easy to guess (a common word, name, pattern or your own name): use a longer passphrase of unrelated words")
	}
	return nil
}

// Add adds a person. Without a password it returns the secret of a
// one-time sign-in link (/console/welcome?t=SECRET), to be given to the
// person; only its hash is kept.
func (s *Staff) Add(ctx context.Context, by oncecall.Actor, p Person) (oncecall.Operator, string, error) {
	if err := op.First(op.Text("name", &p.Name, 64, true), op.Email("email", &p.Email)); err != nil {
		return oncecall.Operator{}, "", err
	}
	if err := validName(p.Name); err != nil {
		return oncecall.Operator{}, "", err
	}
	if !p.Role.Allows(oncecall.RoleViewer) {
		return oncecall.Operator{}, "", fault.Field("role", "must be viewer, resolver or admin")
	}
	var hash string
	if p.Password != "" {
		if err := CheckPassword(p.Password, p.Name, p.Email); err != nil {
			return oncecall.Operator{}, "", err
		}
		h, err := bcrypt.GenerateFromPassword([]byte(p.Password), s.cfg.Cost)
		if err != nil {
			return oncecall.Operator{}, "", err
		}
		hash = string(h)
	}
	var o oncecall.Operator
	var link string
	err := s.cfg.Store.InTx(ctx, func(tx *db.Tx) error {
		var err error
		o, err = tx.CreateOperator(ctx, db.NewOperator{Name: p.Name, Email: p.Email, Role: p.Role, TenantID: p.TenantID, PasswordHash: hash})
		if errors.Is(err, db.ErrEmailTaken) {
			return fault.Field("email", "belongs to another person already")
		}
		if err != nil {
			return err
		}
		if hash == "" {
			if link, err = s.newLink(ctx, tx, o.ID); err != nil {
				return err
			}
		}
		return tx.AddAudit(ctx, oncecall.AuditEntry{Actor: by, TenantID: o.TenantID, Kind: "person_added"},
			map[string]any{"person": o.Name, "role": o.Role, "password": hash != ""})
	})
	return o, link, err
}

// NewLink makes another one-time sign-in link for a person (one who
// forgot their password, or whose link expired). Their password, if any,
// stays until they use it.
func (s *Staff) NewLink(ctx context.Context, by oncecall.Actor, email string) (oncecall.Operator, string, error) {
	if err := op.Email("email", &email); err != nil {
		return oncecall.Operator{}, "", err
	}
	o, err := s.cfg.Store.OperatorByEmail(ctx, email)
	if errors.Is(err, db.ErrNotFound) || (err == nil && !o.DisabledAt.IsZero()) {
		return oncecall.Operator{}, "", fault.New(fault.NotFound, "no enabled person has this e-mail address")
	}
	if err != nil {
		return oncecall.Operator{}, "", err
	}
	var link string
	err = s.cfg.Store.InTx(ctx, func(tx *db.Tx) error {
		var err error
		if link, err = s.newLink(ctx, tx, o.ID); err != nil {
			return err
		}
		return tx.AddAudit(ctx, oncecall.AuditEntry{Actor: by, TenantID: o.TenantID, Kind: "link_made"}, map[string]any{"person": o.Name})
	})
	return o.Operator, link, err
}

type linkMaker interface {
	CreateOperatorLink(ctx context.Context, tokenHash []byte, operator uuid.UUID, ttl time.Duration) error
}

func (s *Staff) newLink(ctx context.Context, q linkMaker, id uuid.UUID) (string, error) {
	secret := newSecret()
	return secret, q.CreateOperatorLink(ctx, hashOf(secret), id, s.cfg.LinkTTL)
}

// ErrWrongPassword: no enabled person has this e-mail address and password.
var ErrWrongPassword = fault.New(fault.Unauthorized, "wrong e-mail address or password")

// Signed is a session just opened: the cookie's secret and the session.
type Signed struct {
	Secret  string
	Session db.Session
}

// SignIn checks a person's e-mail address and password, throttled per
// account, per client address and overall; wait > 0 means it was not
// checked. An unknown address costs the same time as a wrong password.
func (s *Staff) SignIn(ctx context.Context, remoteAddr, email, password string) (Signed, time.Duration, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	attempt, wait := s.cfg.Throttle.Try(remoteAddr, email)
	if wait > 0 {
		return Signed{}, wait, nil
	}
	o, err := s.cfg.Store.OperatorByEmail(ctx, email)
	if err != nil && !errors.Is(err, db.ErrNotFound) {
		attempt.Right() // the database failed, not the guess
		return Signed{}, 0, err
	}
	s.dummyOnce.Do(func() {
		s.dummy, _ = bcrypt.GenerateFromPassword([]byte("no such account, compared for its time"), s.cfg.Cost)
	})
	hash := s.dummy
	if err == nil && o.PasswordHash != "" && o.DisabledAt.IsZero() {
		hash = []byte(o.PasswordHash)
	}
	if len(password) > MaxPasswordLen || bcrypt.CompareHashAndPassword(hash, []byte(password)) != nil || err != nil ||
		o.PasswordHash == "" || !o.DisabledAt.IsZero() {
		return Signed{}, 0, ErrWrongPassword
	}
	attempt.Right()
	sg, err := s.open(ctx, oncecall.Actor{OperatorID: o.ID, Name: o.Name, Via: oncecall.ViaPassword})
	return sg, 0, err
}

// SignInAs opens a session for the enabled person with this e-mail
// address, whom the identity provider vouched for.
func (s *Staff) SignInAs(ctx context.Context, email, via string) (Signed, error) {
	o, err := s.cfg.Store.OperatorByEmail(ctx, strings.ToLower(email))
	if errors.Is(err, db.ErrNotFound) || (err == nil && !o.DisabledAt.IsZero()) {
		return Signed{}, fault.New(fault.Forbidden, "no enabled person of the staff has this e-mail address")
	}
	if err != nil {
		return Signed{}, err
	}
	return s.open(ctx, oncecall.Actor{OperatorID: o.ID, Name: o.Name, Via: via})
}

// BreakGlass opens an admin session of every tenant for a holder of the
// shared operator token (checked by the caller), under the name they gave.
func (s *Staff) BreakGlass(ctx context.Context, name string) (Signed, error) {
	name = strings.TrimSpace(name)
	if err := validName(name); err != nil {
		return Signed{}, err
	}
	return s.open(ctx, oncecall.Actor{Name: name, Via: oncecall.ViaBreakGlass})
}

// LinkValid reports whether a sign-in link's secret may still be used.
func (s *Staff) LinkValid(ctx context.Context, secret string) (bool, error) {
	if secret == "" || len(secret) > 100 {
		return false, nil
	}
	return s.cfg.Store.OperatorLinkValid(ctx, hashOf(secret))
}

// UseLink spends a one-time sign-in link: the person chooses their
// password (refused when weak, and the link is then not spent) and is
// signed in.
func (s *Staff) UseLink(ctx context.Context, secret, password string) (Signed, error) {
	if secret == "" || len(secret) > 100 {
		return Signed{}, errLinkGone
	}
	var sg Signed
	err := s.cfg.Store.InTx(ctx, func(tx *db.Tx) error {
		id, err := tx.UseOperatorLink(ctx, hashOf(secret))
		if errors.Is(err, db.ErrNotFound) {
			return errLinkGone
		}
		if err != nil {
			return err
		}
		o, err := tx.OperatorByID(ctx, id)
		if err != nil {
			return err
		}
		if err := CheckPassword(password, o.Name, o.Email); err != nil {
			return err
		}
		h, err := bcrypt.GenerateFromPassword([]byte(password), s.cfg.Cost)
		if err != nil {
			return err
		}
		if _, err := tx.SetOperatorPassword(ctx, id, string(h)); err != nil {
			return err
		}
		sg, err = s.openOn(ctx, tx, oncecall.Actor{OperatorID: o.ID, Name: o.Name, Via: oncecall.ViaLink})
		return err
	})
	return sg, err
}

var errLinkGone = fault.New(fault.NotFound, "this sign-in link was used already, has expired, or is not one: ask an admin for a new one")

// Session returns the open session whose cookie holds secret.
func (s *Staff) Session(ctx context.Context, secret string) (db.Session, error) {
	if secret == "" || len(secret) > 100 {
		return db.Session{}, db.ErrNotFound
	}
	return s.cfg.Store.OperatorSession(ctx, hashOf(secret))
}

// SignOut ends the session whose cookie holds secret, on every replica: a
// copy of the cookie is refused from now on.
func (s *Staff) SignOut(ctx context.Context, secret string) error {
	sess, err := s.Session(ctx, secret)
	if errors.Is(err, db.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.cfg.Store.InTx(ctx, func(tx *db.Tx) error {
		ended, err := tx.RevokeOperatorSession(ctx, hashOf(secret))
		if err != nil || !ended {
			return err
		}
		return tx.AddAudit(ctx, oncecall.AuditEntry{Actor: sess.Actor, TenantID: sess.TenantID, Kind: "signed_out"}, nil)
	})
}

// EndSessions ends every open session of a person (an admin's doing, by),
// and returns how many there were.
func (s *Staff) EndSessions(ctx context.Context, by oncecall.Actor, person uuid.UUID) (int64, error) {
	var n int64
	err := s.cfg.Store.InTx(ctx, func(tx *db.Tx) error {
		o, err := tx.OperatorByID(ctx, person)
		if err != nil {
			return err
		}
		if n, err = tx.RevokeSessionsOf(ctx, person); err != nil {
			return err
		}
		return tx.AddAudit(ctx, oncecall.AuditEntry{Actor: by, TenantID: o.TenantID, Kind: "sessions_ended"},
			map[string]any{"person": o.Name, "sessions": n})
	})
	return n, err
}

// Disable disables a person (an admin's doing, by): their sessions end at
// once and they cannot sign in again. They stay named in the audit trail.
func (s *Staff) Disable(ctx context.Context, by oncecall.Actor, person uuid.UUID) error {
	return s.cfg.Store.InTx(ctx, func(tx *db.Tx) error {
		o, err := tx.OperatorByID(ctx, person)
		if err != nil {
			return err
		}
		if ok, err := tx.DisableOperator(ctx, person); err != nil || !ok {
			return err
		}
		if _, err := tx.RevokeSessionsOf(ctx, person); err != nil {
			return err
		}
		return tx.AddAudit(ctx, oncecall.AuditEntry{Actor: by, TenantID: o.TenantID, Kind: "person_disabled"},
			map[string]any{"person": o.Name})
	})
}

type sessionOpener interface {
	CreateOperatorSession(ctx context.Context, s db.NewSession) (uuid.UUID, time.Time, error)
	OperatorSession(ctx context.Context, tokenHash []byte) (db.Session, error)
	AddAudit(ctx context.Context, e oncecall.AuditEntry, detail any) error
}

func (s *Staff) open(ctx context.Context, who oncecall.Actor) (Signed, error) {
	return s.openOn(ctx, s.cfg.Store, who)
}

func (s *Staff) openOn(ctx context.Context, q sessionOpener, who oncecall.Actor) (Signed, error) {
	secret := newSecret()
	if _, _, err := q.CreateOperatorSession(ctx, db.NewSession{
		TokenHash: hashOf(secret), OperatorID: who.OperatorID, Name: who.Name, Via: who.Via, TTL: s.cfg.SessionTTL,
	}); err != nil {
		return Signed{}, err
	}
	sess, err := q.OperatorSession(ctx, hashOf(secret))
	if err != nil {
		return Signed{}, err
	}
	// Every sign-in is in the audit trail, a break-glass one named as such,
	// under the person's tenant, so that its admins see it.
	if err := q.AddAudit(ctx, oncecall.AuditEntry{Actor: who, TenantID: sess.TenantID, Kind: "signed_in"}, nil); err != nil {
		return Signed{}, err
	}
	return Signed{Secret: secret, Session: sess}, nil
}

// newSecret is 32 random bytes, base64url: a session's or a link's secret.
func newSecret() string {
	b := make([]byte, 32)
	rand.Read(b) //nolint:errcheck // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

func hashOf(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// validName checks a person's name: 1 to 64 printable characters.
func validName(name string) error {
	if name == "" || utf8.RuneCountInString(name) > 64 || !utf8.ValidString(name) {
		return fault.Field("name", "must be 1 to 64 characters")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fault.Field("name", "must be printable characters")
		}
	}
	return nil
}
