package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
)

// callsTruth is the settled state the claims are checked against.
type callsTruth struct {
	Appointments map[string]truthAppointment
	Customers    map[string]truthCustomer
	// Charges are the payments provider's charges (Object: the payment
	// intent); Messages the messaging provider's sends; Notes, Points and
	// Callbacks oncecall's rows. Each names its intent by the token in its
	// text, where it has one.
	Charges   []truthEffect
	Messages  []truthEffect
	Notes     []truthEffect
	Points    []truthEffect
	Callbacks map[string]truthCallback
	// Unfinished counts actions still running or unknown (not left for an
	// operator); NeedsOperator those left for one.
	Unfinished, NeedsOperator int
}

type truthAppointment struct {
	ID, Customer, Slot string
	Start              time.Time
	Active             bool
}

type truthCustomer struct {
	ID, Phone string
	Points    int64
}

type truthEffect struct {
	Ref, Customer, Object, Token string
	Amount, Delta                int64
}

type truthCallback struct {
	ID, Customer, Token string
	Active              bool
	Window              [2]string
}

// tokenPattern finds an intent's token in a text.
var tokenPattern = regexp.MustCompile(`\b[mncp]-[0-9]+-[0-9]+-[0-9a-f]{6}\b`)

// tokenIn returns the token a text carries, or "".
func tokenIn(s string) string { return tokenPattern.FindString(s) }

// loadCallsTruth reads the settled state of w's tenants: oncecall's rows
// (read directly: the audit checks oncecall, so it does not go through
// it) and the providers' committed writes in ledger.
func loadCallsTruth(ctx context.Context, pool *pgxpool.Pool, w *callWorld, ledger []providersim.LedgerEntry) (callsTruth, error) {
	t := callsTruth{
		Appointments: map[string]truthAppointment{}, Customers: map[string]truthCustomer{}, Callbacks: map[string]truthCallback{},
	}
	var tenants []string
	for _, tn := range w.Tenants {
		tenants = append(tenants, tn.ID)
	}
	query := func(what, sql string, scan func(pgx.Rows) error) error {
		rows, err := pool.Query(ctx, sql, tenants)
		if err != nil {
			return fmt.Errorf("read %s: %w", what, err)
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows); err != nil {
				return fmt.Errorf("read %s: %w", what, err)
			}
		}
		return rows.Err()
	}
	err := query("appointments", `SELECT a.id::text, a.customer_id::text, a.slot_id::text, s.starts_at, a.status = 'active'
		FROM appointments a JOIN slots s ON s.id = a.slot_id WHERE a.tenant_id = ANY($1::uuid[])`, func(r pgx.Rows) error {
		var a truthAppointment
		err := r.Scan(&a.ID, &a.Customer, &a.Slot, &a.Start, &a.Active)
		t.Appointments[a.ID] = a
		return err
	})
	if err == nil {
		err = query("customers", `SELECT id::text, coalesce(phone, ''), points FROM customers WHERE tenant_id = ANY($1::uuid[])`, func(r pgx.Rows) error {
			var c truthCustomer
			err := r.Scan(&c.ID, &c.Phone, &c.Points)
			t.Customers[c.ID] = c
			return err
		})
	}
	if err == nil {
		err = query("notes", `SELECT id::text, customer_id::text, text FROM customer_notes WHERE tenant_id = ANY($1::uuid[])`, func(r pgx.Rows) error {
			var e truthEffect
			var text string
			err := r.Scan(&e.Ref, &e.Customer, &text)
			e.Token = tokenIn(text)
			t.Notes = append(t.Notes, e)
			return err
		})
	}
	if err == nil {
		err = query("points", `SELECT id::text, customer_id::text, delta, reason FROM points_ledger WHERE tenant_id = ANY($1::uuid[])`, func(r pgx.Rows) error {
			var e truthEffect
			var reason string
			err := r.Scan(&e.Ref, &e.Customer, &e.Delta, &reason)
			e.Token = tokenIn(reason)
			t.Points = append(t.Points, e)
			return err
		})
	}
	if err == nil {
		err = query("callbacks", `SELECT id::text, coalesce(customer_id::text, ''), status = 'requested', window_start, window_end, timezone, reason
			FROM callbacks WHERE tenant_id = ANY($1::uuid[])`, func(r pgx.Rows) error {
			var cb truthCallback
			var start, end time.Time
			var zone, reason string
			err := r.Scan(&cb.ID, &cb.Customer, &cb.Active, &start, &end, &zone, &reason)
			loc, lerr := time.LoadLocation(zone)
			if lerr != nil {
				loc = time.UTC
			}
			cb.Token = tokenIn(reason)
			cb.Window = [2]string{start.In(loc).Format("2006-01-02T15:04"), end.In(loc).Format("2006-01-02T15:04")}
			t.Callbacks[cb.ID] = cb
			return err
		})
	}
	if err == nil {
		err = pool.QueryRow(ctx, `SELECT
			count(*) FILTER (WHERE state IN ('running', 'unknown') AND NOT needs_operator),
			count(*) FILTER (WHERE state <> 'completed' AND needs_operator)
			FROM actions WHERE tenant_id = ANY($1::uuid[])`, tenants).Scan(&t.Unfinished, &t.NeedsOperator)
	}
	if err != nil {
		return t, err
	}
	for _, l := range ledger {
		var p struct {
			PaymentIntentID string            `json:"payment_intent_id"`
			Amount          int64             `json:"amount"`
			CustomerID      string            `json:"customer_id"`
			Body            string            `json:"body"`
			Variables       map[string]string `json:"variables"`
		}
		_ = json.Unmarshal(l.Payload, &p) // a payload the audit cannot read names no intent
		switch l.Capability {
		case provider.Payments:
			t.Charges = append(t.Charges, truthEffect{Ref: l.ID, Object: p.PaymentIntentID, Amount: p.Amount})
		case provider.Messaging:
			token := tokenIn(p.Body)
			if token == "" {
				token = tokenIn(p.Variables["body"])
			}
			t.Messages = append(t.Messages, truthEffect{Ref: l.ID, Customer: p.CustomerID, Token: token})
		}
	}
	return t, nil
}
