package idem

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
)

func TestAnswersKeepCompletedActionsWithinBudgetAndAge(t *testing.T) {
	tenant := uuid.New()
	clock := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	body := bytes.Repeat([]byte("x"), 400)
	action := func(key string, state oncecall.State) oncecall.Action {
		return oncecall.Action{
			ID: uuid.New(), TenantID: tenant, Key: key, Operation: "appointment.book", Fingerprint: "f",
			State: state, Outcome: oncecall.Confirmed, Status: 201, Result: body, Request: []byte(`{"customer":"secret"}`),
		}
	}
	size := answerOverhead + len("k00") + len("appointment.book") + len("f") + len(body) + len(`{"customer":"secret"}`)
	s := newAnswers(20*size, time.Minute)
	s.now = func() time.Time { return clock }

	// Only completed actions are kept; an answer larger than a sixteenth of
	// the budget is not, nor one whose action is older than the age.
	s.put(action("run", oncecall.Running))
	s.put(action("unk", oncecall.Unknown))
	if len(s.byKey) != 0 {
		t.Fatalf("kept %d unfinished actions", len(s.byKey))
	}
	big := action("big", oncecall.Completed)
	big.Result = bytes.Repeat([]byte("x"), 2*size)
	s.put(big)
	if _, ok := s.get(tenant, "big"); ok {
		t.Fatal("an answer larger than a sixteenth of the budget was kept")
	}
	old := action("old", oncecall.Completed)
	old.CreatedAt = clock.Add(-time.Minute)
	s.put(old)
	if _, ok := s.get(tenant, "old"); ok {
		t.Fatal("the answer of an action created a minute ago was kept")
	}

	// The budget holds twenty; the twenty-first pushes out the oldest.
	kept := map[string]uuid.UUID{}
	for i := range 21 {
		a := action(fmt.Sprintf("k%02d", i), oncecall.Completed)
		kept[a.Key] = a.ID
		s.put(a)
	}
	if _, ok := s.get(tenant, "k00"); ok {
		t.Fatal("the oldest answer survived a full budget")
	}
	for _, k := range []string{"k01", "k20"} {
		got, ok := s.get(tenant, k)
		if !ok || got.ID != kept[k] || string(got.Request) != `{"customer":"secret"}` || !bytes.Equal(got.Result, body) {
			t.Fatalf("%s: %+v %v", k, got, ok)
		}
	}
	if s.used > s.budget {
		t.Fatalf("used %d of a budget of %d", s.used, s.budget)
	}
	// Another tenant's key of the same name is another answer.
	if _, ok := s.get(uuid.New(), "k01"); ok {
		t.Fatal("an answer was found under another tenant")
	}
	// A second put of the same key keeps the first.
	again := action("k01", oncecall.Completed)
	s.put(again)
	if got, _ := s.get(tenant, "k01"); got.ID != kept["k01"] {
		t.Fatalf("the kept answer was replaced")
	}

	// A minute after their actions' creation nothing is answered, and a
	// later put drops the old ones.
	clock = clock.Add(time.Minute)
	if _, ok := s.get(tenant, "k20"); ok {
		t.Fatal("an answer older than the age was used")
	}
	s.put(action("new", oncecall.Completed))
	if len(s.byKey) != 1 || s.used != size {
		t.Fatalf("after the age: %d answers, %d bytes used; want 1 and %d", len(s.byKey), s.used, size)
	}
}

func TestAnswersOffWithoutBudget(t *testing.T) {
	s := newAnswers(0, time.Minute)
	if s.holds(&Request{Key: "k"}) {
		t.Fatal("a core without an answer budget keeps answers")
	}
}
