package chaos

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// playFake plays calls of the scripts a seed draws (only the kinds given)
// against f, as a calls run plays them against oncecall, and audits them
// against f's state.
func playFake(t *testing.T, seed uint64, calls int, kinds []string, b fakeBreaks) CallsReport {
	t.Helper()
	allowed := map[string]bool{}
	for _, k := range kinds {
		allowed[k] = true
	}
	w := newCallWorld(seed, scriptOptions{Calls: calls, Tenants: 2, Kinds: allowed})
	f := newFakeOncecall(w, b)
	srv := httptest.NewServer(f)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	r := &callRunner{
		seed: seed, base: func() string { return srv.URL }, hc: srv.Client(), fed: make(chan struct{}),
		turn: time.Millisecond, statusEvery: 20 * time.Millisecond, statusFor: 300 * time.Millisecond,
	}
	models := playCalls(ctx, ctx, r, w, playOrder(w, nil), 8, func(int) {})
	lateChecks(ctx, models, 8)
	rep := judgeCalls(w, f.truth(), false)
	rep.ToolCalls = int(r.toolCalls.Load())
	for _, p := range callPlatforms {
		if rep.Answers[p] > 0 {
			rep.Platforms++
		}
	}
	return rep
}

// fakeKinds are the kinds of intent the fake serves.
var fakeKinds = []string{wantCreate, wantBook, wantMove, wantCancel, wantPay, wantLink, wantMessage, wantNote, wantPoints}

// A server that keeps the promise, played by the same models with every
// behaviour (re-sends, re-invocations, rewordings, changed minds,
// interruptions, parallel calls, contention, a caller on two platforms,
// made-up action_ids, long call ids): the audit finds nothing.
func TestCallsAuditFindsNothingOnAServerThatKeepsThePromise(t *testing.T) {
	t.Parallel()
	rep := playFake(t, 42, 160, fakeKinds, fakeBreaks{})
	t.Log(rep.Details())
	t.Log(rep.String())
	if !rep.OK() {
		t.Fatalf("the audit found violations on a server that keeps the promise: %s\n%s\n%s",
			rep, strings.Join(rep.Problems, "\n"), strings.Join(rep.Histories[:min(2, len(rep.Histories))], "\n"))
	}
	if rep.Calls != 160 || rep.Platforms != 4 || rep.Confirmed < rep.Intents/2 {
		t.Fatalf("too little was played to prove anything: %s %s", rep, rep.Details())
	}
}

// Each rule broken on purpose in the fake server makes its count go up.
func TestCallsAuditCatchesEachBrokenRule(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		breaks fakeBreaks
		kinds  []string
		caught func(CallsReport) int
	}{{
		name: "a charge confirmed that charged nothing is lost and spoken false", breaks: fakeBreaks{ConfirmWithoutCharge: true},
		kinds: []string{wantPay}, caught: func(r CallsReport) int { return min(r.Lost, r.SpokenFalse) },
	}, {
		name: "a booking made again on every delivery is a duplicate", breaks: fakeBreaks{BookEveryDelivery: true},
		kinds: []string{wantBook}, caught: func(r CallsReport) int { return r.Duplicates },
	}, {
		name: "a charge said declined that charged is spoken false", breaks: fakeBreaks{DeclineButCharge: true},
		kinds: []string{wantPay}, caught: func(r CallsReport) int { return r.SpokenFalse },
	}, {
		name: "a message pending for ever is unsettled", breaks: fakeBreaks{PendingMessages: true},
		kinds: []string{wantMessage}, caught: func(r CallsReport) int { return r.Unsettled },
	}, {
		name: "a pending answer whose say claims the send is spoken false", breaks: fakeBreaks{PendingSaysSent: true},
		kinds: []string{wantMessage}, caught: func(r CallsReport) int { return r.SpokenFalse },
	}, {
		name: "a note confirmed and not kept is lost and spoken false", breaks: fakeBreaks{ForgetNotes: true},
		kinds: []string{wantNote}, caught: func(r CallsReport) int { return min(r.Lost, r.SpokenFalse) },
	}, {
		name: "503s to a call while another call is slow are lockouts", breaks: fakeBreaks{LockOut: true},
		kinds: []string{wantCreate, wantNote, wantPoints}, caught: func(r CallsReport) int { return r.Lockouts },
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			kept := playFake(t, 7, 60, tc.kinds, fakeBreaks{})
			if !kept.OK() {
				t.Fatalf("kept: %s\n%s", kept, strings.Join(kept.Problems, "\n"))
			}
			broken := playFake(t, 7, 60, tc.kinds, tc.breaks)
			t.Log(broken.String())
			if tc.caught(broken) == 0 || broken.OK() {
				t.Fatalf("the broken rule was not caught: %s\n%s", broken, broken.Details())
			}
			if len(broken.Histories) == 0 || !strings.Contains(broken.Histories[0], "VIOLATION") {
				t.Fatal("a violation printed no history")
			}
		})
	}
}
