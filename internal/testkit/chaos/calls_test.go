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
	// The rarer behaviours often: few calls have them all.
	w := newCallWorld(seed, scriptOptions{Calls: calls, Tenants: 2, Kinds: allowed, Often: true})
	f := newFakeOncecall(w, b)
	srv := httptest.NewServer(f)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	r := &callRunner{
		seed: seed, base: func() string { return srv.URL }, hc: srv.Client(), fed: make(chan struct{}),
		turn: time.Millisecond, statusEvery: 20 * time.Millisecond, statusFor: 300 * time.Millisecond,
	}
	models := playCalls(ctx, ctx, r, w, playOrder(w, nil), 16, func(int) {})
	lateChecks(ctx, models, 16)
	rep := judgeCalls(w, f.truth(), false)
	rep.Seed, rep.ToolCalls = seed, int(r.toolCalls.Load())
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

// Each rule broken on purpose in the fake server makes its count go up:
// first the rules of the counts, then, each as a fake would have it, the
// breaks calls runs found in oncecall.
func TestCallsAuditCatchesEachBrokenRule(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		kept   fakeBreaks // the conditions, with every rule kept
		broken fakeBreaks
		kinds  []string
		caught func(CallsReport) int
	}{{
		name: "a charge confirmed that charged nothing is lost and spoken false", broken: fakeBreaks{ConfirmWithoutCharge: true},
		kinds: []string{wantPay}, caught: func(r CallsReport) int { return min(r.Lost, r.SpokenFalse) },
	}, {
		name: "a booking made again on every delivery is a duplicate", broken: fakeBreaks{BookEveryDelivery: true},
		kinds: []string{wantBook}, caught: func(r CallsReport) int { return r.Duplicates },
	}, {
		name: "a charge said declined that charged is spoken false", broken: fakeBreaks{DeclineButCharge: true},
		kinds: []string{wantPay}, caught: func(r CallsReport) int { return r.SpokenFalse },
	}, {
		name: "a message pending for ever is unsettled", broken: fakeBreaks{PendingMessages: true},
		kinds: []string{wantMessage}, caught: func(r CallsReport) int { return r.Unsettled },
	}, {
		name: "a pending answer whose say claims the send is spoken false", broken: fakeBreaks{PendingSaysSent: true},
		kinds: []string{wantMessage}, caught: func(r CallsReport) int { return r.SpokenFalse },
	}, {
		name: "a note confirmed and not kept is lost and spoken false", broken: fakeBreaks{ForgetNotes: true},
		kinds: []string{wantNote}, caught: func(r CallsReport) int { return min(r.Lost, r.SpokenFalse) },
	}, {
		name: "503s to a call while another call is slow are lockouts", broken: fakeBreaks{LockOut: true},
		kinds: []string{wantCreate, wantNote, wantPoints}, caught: func(r CallsReport) int { return r.Lockouts },
	}, {
		name: "a changed mind that books a second time is a duplicate", broken: fakeBreaks{SecondBookingInCall: true},
		kinds: []string{wantBook}, caught: func(r CallsReport) int { return r.Duplicates },
	}, {
		name: "the same time spelled two ways, taken for two requests, is spoken false", broken: fakeBreaks{KeyBySpelling: true},
		kinds: []string{wantBook}, caught: func(r CallsReport) int { return r.SpokenFalse },
	}, {
		name: "a made-up action_id shared by callers and tools is spoken false and lost", broken: fakeBreaks{SharedActionIDs: true},
		kinds: []string{wantCreate, wantPay, wantMessage, wantNote, wantPoints}, caught: func(r CallsReport) int { return min(r.SpokenFalse, r.Lost) },
	}, {
		name: "a Dasha call id that names another platform's call loses a note", broken: fakeBreaks{CallWithoutPlatform: true},
		kinds: []string{wantNote, wantPoints}, caught: func(r CallsReport) int { return min(r.SpokenFalse, r.Lost) },
	}, {
		name: "a decline answered afresh to the next request charges what was said declined",
		kept: fakeBreaks{Declines: true}, broken: fakeBreaks{Declines: true, ForgetDeclines: true},
		kinds: []string{wantPay}, caught: func(r CallsReport) int { return r.SpokenFalse },
	}, {
		name: "long call ids refused leave their intents unsettled", broken: fakeBreaks{RefuseLongCallIDs: true},
		kinds: []string{wantNote, wantPoints, wantMessage}, caught: func(r CallsReport) int { return r.Unsettled },
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			kept := playFake(t, 7, 80, tc.kinds, tc.kept)
			if !kept.OK() {
				t.Fatalf("kept: %s\n%s", kept, strings.Join(kept.Problems, "\n"))
			}
			broken := playFake(t, 7, 80, tc.kinds, tc.broken)
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
