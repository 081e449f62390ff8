package idem_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/idem"
)

// gate is an idem.Gate that records what it was asked and refuses until
// opened.
type gate struct {
	mu     sync.Mutex
	open   bool
	priors []uuid.UUID // uuid.Nil for a free key
}

var errRefused = errors.New("refused by the gate")

func (g *gate) Admit(_ context.Context, prior *oncecall.Action) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	id := uuid.Nil
	if prior != nil {
		id = prior.ID
	}
	g.priors = append(g.priors, id)
	if !g.open {
		return errRefused
	}
	return nil
}

func (g *gate) asked() []uuid.UUID {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]uuid.UUID(nil), g.priors...)
}

// The gate is asked before every execution and only then: before a free
// key is claimed (no prior), before an answer that no longer holds is
// superseded (that action as prior), never for a replay of an answer that
// stands nor for a request naming its action. A refusal is Do's error:
// nothing runs, nothing is claimed, the stale action keeps its key.
func TestGateIsAskedBeforeEveryExecution(t *testing.T) {
	t.Parallel()
	for _, form := range []string{"go", "statement"} {
		t.Run(form, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			var (
				runs    int
				mu      sync.Mutex
				goStale bool
			)
			g := &gate{}
			req := idem.Request{
				TenantID: e.tenant.ID, Key: idem.DeriveKey("test", "gated"), Operation: "test.op", Fingerprint: "f",
				Input: []byte(`{}`), Work: run(noteRun(&runs, &mu)), Gate: g,
				Stale: stale(func(context.Context, oncecall.Action) (bool, error) { return goStale, nil }),
			}
			if form == "statement" {
				req.Work = statement(func(s *db.Statement, _ idem.Exec) {
					mu.Lock()
					runs++
					mu.Unlock()
					s.CreateCustomer(db.NewCustomer{TenantID: e.tenant.ID, Name: "n"})
				})
			}
			do := func() (idem.Reply, error) { return e.core.Do(t.Context(), req) }

			if _, err := do(); !errors.Is(err, errRefused) || runs != 0 || e.count(t, "actions") != 0 {
				t.Fatalf("a refused request: %v, %d runs, %d actions; want the refusal and nothing", err, runs, e.count(t, "actions"))
			}
			if got := g.asked(); len(got) != 1 || got[0] != uuid.Nil {
				t.Fatalf("the gate was asked about %v, want one free key", got)
			}
			g.open = true
			first, err := do()
			if err != nil || first.Replayed || runs != 1 {
				t.Fatalf("the admitted request: %+v %v after %d runs", first, err, runs)
			}
			// A replay of the answer that stands, and a request naming
			// it: not asked.
			if r, err := do(); err != nil || !r.Replayed || r.Action.ID != first.Action.ID {
				t.Fatalf("the replay: %+v %v", r, err)
			}
			named := req
			named.Named = first.Action.ID
			if r, err := e.core.Do(t.Context(), named); err != nil || !r.Replayed {
				t.Fatalf("the request naming its action: %+v %v", r, err)
			}
			if n := len(g.asked()); n != 2 {
				t.Fatalf("the gate was asked %d times after the replays, want 2", n)
			}

			// The answer no longer holds: superseding it is an execution.
			goStale, g.open = true, false
			if _, err := do(); !errors.Is(err, errRefused) || runs != 1 {
				t.Fatalf("a refused supersession: %v after %d runs", err, runs)
			}
			if a, err := e.store.ActionByKey(t.Context(), e.tenant.ID, req.Key); err != nil || a.ID != first.Action.ID {
				t.Fatalf("after a refused supersession the key names %+v (%v), want %s", a.ID, err, first.Action.ID)
			}
			if got := g.asked(); got[len(got)-1] != first.Action.ID {
				t.Fatalf("the gate was asked about %v, want the stale action %s last", got, first.Action.ID)
			}
			g.open = true
			second, err := do()
			if err != nil || second.Replayed || second.Action.ID == first.Action.ID || runs != 2 {
				t.Fatalf("the admitted supersession: %+v %v after %d runs", second, err, runs)
			}
		})
	}
}
