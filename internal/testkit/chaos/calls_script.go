package chaos

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/google/uuid"
)

// The calls run (RunCalls) plays whole phone calls: each a script of what
// one caller wants, on one voice platform, played by a simulated model.
// This file makes the scripts and the world they need from a seed: the
// tenants, their calendar (a service, two practitioners, slots), the
// returning callers with their bookings and approved payments. The same
// seed gives the same world and the same scripts, ids included.

// The voice platforms a call can come from.
const (
	platDasha      = "dasha"
	platVapi       = "vapi"
	platRetell     = "retell"
	platElevenLabs = "elevenlabs"
)

var callPlatforms = []string{platDasha, platVapi, platRetell, platElevenLabs}

// What a caller can want done: the kinds of intent.
const (
	wantCreate   = "create"   // a new caller's customer record
	wantBook     = "book"     // a booking, by slot or by service at a time
	wantMove     = "move"     // moving a booking
	wantCancel   = "cancel"   // cancelling a booking
	wantPay      = "pay"      // charging an approved payment
	wantLink     = "link"     // a payment link for an approved payment
	wantMessage  = "message"  // an SMS
	wantNote     = "note"     // a note on the customer's record
	wantPoints   = "points"   // loyalty points added or redeemed
	wantCallback = "callback" // a callback in a window
)

// callWorld is everything the calls use: tenants with their calendars, and
// the scripts.
type callWorld struct {
	Tenants []*callTenant
	Calls   []*callScript
	// Slots, People and Intents are every seeded row, by id.
	Slots   map[string]*callSlot
	People  map[string]*callPerson
	Intents map[string]*callPI
	// Appointments are the returning callers' bookings made before the
	// calls (id -> the booking).
	Appointments map[string]*seededBooking
}

// callTenant is one business.
type callTenant struct {
	N         int
	ID        string // set when seeded
	Key       string // its API key, set when seeded
	Org       string // the Dasha org it is bound to
	RetellKey string // its Retell API key: Retell calls are signed with it
	Zone      string
	loc       *time.Location
	Location  string
	Service   string
	// Practitioners perform the service at the location; every slot is
	// one of theirs.
	Practitioners [2]string
	next          time.Time // the next free hour of its calendar
}

// callSlot is a bookable hour of one practitioner (Who: the first or the
// second).
type callSlot struct {
	ID     string
	Tenant *callTenant
	Start  time.Time
	Who    int
}

// serviceTime is an hour at which both practitioners have a slot: a
// booking of the service at that time takes one of them.
type serviceTime struct {
	Start time.Time
	Slots [2]*callSlot
}

// callPerson is a customer who calls.
type callPerson struct {
	ID     string // set for a returning caller; a new caller's comes from create_customer
	Name   string
	Phone  string
	Tenant *callTenant
	// Seeded: a returning caller, in the database before the calls.
	Seeded bool
	Points int64 // the seeded balance
}

// seededBooking is a returning caller's booking made before the calls.
type seededBooking struct {
	ID     string
	Person *callPerson
	Slot   *callSlot
}

// callPI is a payment the business approved for a returning caller.
type callPI struct {
	ID     string
	Person *callPerson
	Amount int64
}

// callScript is one phone call: who calls, on which platform, and what
// they want, in order.
type callScript struct {
	N        int
	Platform string
	CallID   string
	Tenant   *callTenant
	Person   *callPerson
	Intents  []*callIntent
	// Booking is the returning caller's booking (move and cancel intents
	// may name it); nil for a new caller.
	Booking *seededBooking
	// Partner pairs this call with another that runs at the same time:
	// the same slot wanted by two callers (Contend), or the same caller on
	// another platform.
	Partner *callScript
	pair    *rendezvous
	// Parallel: the call's independent intents are played at once.
	Parallel bool
	// Impatient: the caller's platform sends a write again while its
	// answer is slow.
	Impatient bool
	// MadeUp is an action_id the model invents instead of omitting it
	// (empty: it does not).
	MadeUp string
	// Shape says how the call id was made, for the history.
	Shape string

	// What was played, by the player (calls_model.go).
	play *callPlay
}

// callIntent is one thing a caller wants done once.
type callIntent struct {
	Call *callScript
	N    int
	Kind string
	// Book: the slot first asked for, the alternative asked for when it
	// was taken, and (ChangeTo) the slot the caller changes their mind to.
	// By service: At is the time, with the slots of both practitioners.
	Slot, Alternative, ChangeTo *callSlot
	At                          *serviceTime
	// Contended: another call wants Slot at the same time.
	Contended bool
	// Restate: once answered, the model asks again in other words (the
	// other spelling of every value that has one).
	Restate bool
	// Move and cancel: Of is the call's own booking intent, or, when nil,
	// the caller's seeded booking. Move's target is Slot.
	Of *callIntent
	// Pay and link.
	PI *callPI
	// Message, note, points, callback: Token makes each one's text unique
	// (the audit finds its effects by it); Ref names a deliberate second
	// effect of the same kind in the call.
	Token string
	Ref   string
	Delta int64
	// Note and callback: the caller changes their mind (a new text, or a
	// new window) once it is done.
	Change bool
	Window [2]time.Time // a callback's window, wall clock in the tenant's zone
	// Window2 is the window changed to.
	Window2 [2]time.Time
}

// needsBooking: the intent acts on a booking (the call's own or the
// seeded one).
func (in *callIntent) needsBooking() bool { return in.Kind == wantMove || in.Kind == wantCancel }

// rendezvous lets two calls reach a point together (two callers asking
// for one slot at once).
type rendezvous struct{ arrived chan struct{} }

// callZones are the tenants' timezones, in turn.
var callZones = []string{"America/New_York", "Europe/London", "Asia/Kolkata", "Australia/Sydney", "America/Los_Angeles"}

// scriptOptions shape the scripts.
type scriptOptions struct {
	Calls   int
	Tenants int
	// Kinds, when set, are the only kinds of intent drawn (tests use it
	// to play a few kinds against a fake server).
	Kinds map[string]bool
	// Start is the first hour of every calendar.
	Start time.Time
	// Platforms, when set, are the only platforms drawn.
	Platforms []string
	// Often draws the rarer behaviours eight times as often (tests play
	// few calls).
	Often bool
}

// newCallWorld makes the tenants and the scripts of a run from seed.
func newCallWorld(seed uint64, o scriptOptions) *callWorld {
	rng := rand.New(rand.NewPCG(seed, 0xca11))
	w := &callWorld{
		Slots: map[string]*callSlot{}, People: map[string]*callPerson{}, Intents: map[string]*callPI{},
		Appointments: map[string]*seededBooking{},
	}
	if o.Start.IsZero() {
		o.Start = time.Now().Add(48 * time.Hour).Truncate(24 * time.Hour)
	}
	platforms := o.Platforms
	if len(platforms) == 0 {
		platforms = callPlatforms
	}
	for i := range max(o.Tenants, 1) {
		zone := callZones[i%len(callZones)]
		loc, err := time.LoadLocation(zone)
		if err != nil {
			loc = time.UTC
			zone = "UTC"
		}
		w.Tenants = append(w.Tenants, &callTenant{
			N: i, Org: fmt.Sprintf("chaos-org-%d", i), RetellKey: "key_" + hexOf(rng, 24), Zone: zone, loc: loc,
			Location: idOf(rng), Service: idOf(rng), Practitioners: [2]string{idOf(rng), idOf(rng)}, next: o.Start,
		})
	}
	g := &scriptGen{w: w, rng: rng, o: o, platforms: platforms}
	for len(w.Calls) < o.Calls {
		g.call()
	}
	w.Calls = w.Calls[:o.Calls]
	for i, c := range w.Calls {
		c.N = i
	}
	return w
}

// scriptGen draws the scripts.
type scriptGen struct {
	w         *callWorld
	rng       *rand.Rand
	o         scriptOptions
	platforms []string
	phones    int
}

func (g *scriptGen) allowed(kind string) bool { return g.o.Kinds == nil || g.o.Kinds[kind] }

func (g *scriptGen) chance(p float64) bool { return g.rng.Float64() < p }

// rare draws one of the rarer behaviours (pairs of calls, made-up
// action_ids, long call ids, changed minds, bookings by service), eight
// times as often when the options ask for them Often.
func (g *scriptGen) rare(p float64) bool {
	if g.o.Often {
		p = min(0.6, 8*p)
	}
	return g.chance(p)
}

// call draws one call, or two that run together: two callers wanting the
// same slot, or one caller on two platforms.
func (g *scriptGen) call() {
	t := g.w.Tenants[len(g.w.Calls)%len(g.w.Tenants)]
	c := g.script(t, g.person(t, g.chance(0.25) && g.allowed(wantCreate)))
	switch {
	case g.rare(0.06) && len(g.w.Calls)+2 <= g.o.Calls && c.bookIntent() != nil && c.Person.Seeded:
		// Two callers want the same slot at the same time.
		other := g.script(t, g.person(t, false))
		g.contend(c, other)
	case g.rare(0.06) && len(g.w.Calls)+2 <= g.o.Calls && c.Person.Seeded:
		// The same caller on another platform, at the same time; neither
		// call touches the other's booking.
		other := g.script(t, c.Person)
		other.Booking = nil
		for other.Platform == c.Platform {
			other.Platform = g.platforms[g.rng.IntN(len(g.platforms))]
			if len(g.platforms) == 1 {
				break
			}
		}
		other.Intents = slicesDeleteFunc(other.Intents, func(in *callIntent) bool { return in.needsBooking() && in.Of == nil })
		if len(other.Intents) == 0 {
			other.Intents = []*callIntent{{Call: other, Kind: wantNote, Token: fmt.Sprintf("n-%d-0-%s", len(g.w.Calls)+1, hexOf(g.rng, 3))}}
		}
		g.renumber(other)
		other.CallID, other.Shape = g.callID(other.Platform)
		// A Dasha call id that spells another platform's stored one, when
		// it is one oncecall takes (a long id with its platform's prefix
		// can be longer than that: no Dasha call can spell it).
		if other.Platform == platDasha && c.Platform != platDasha && g.rare(0.3) && len(c.Platform)+1+len(c.CallID) <= maxCallID {
			other.CallID, other.Shape = c.Platform+":"+c.CallID, "platform-prefixed"
		} else if c.Platform == platDasha && other.Platform != platDasha && g.rare(0.3) && len(other.Platform)+1+len(other.CallID) <= maxCallID {
			c.CallID, c.Shape = other.Platform+":"+other.CallID, "platform-prefixed"
		}
		c.Partner, other.Partner = other, c
		g.w.Calls = append(g.w.Calls, c, other)
	default:
		g.w.Calls = append(g.w.Calls, c)
	}
}

// contend makes c and other want one slot at once: other's booking intent
// asks first for c's slot.
func (g *scriptGen) contend(c, other *callScript) {
	b := c.bookIntent()
	if b.At != nil || b.Slot == nil {
		b.At, b.Slot, b.Alternative = nil, g.slot(c.Tenant), g.slot(c.Tenant)
	}
	ob := other.bookIntent()
	if ob == nil {
		ob = &callIntent{Call: other, Kind: wantBook}
		other.Intents = append([]*callIntent{ob}, other.Intents...)
	}
	ob.At, ob.ChangeTo, ob.Slot, ob.Alternative = nil, nil, b.Slot, g.slot(c.Tenant)
	b.ChangeTo = nil
	b.Contended, ob.Contended = true, true
	// Both ask for the slot first.
	other.Intents = append([]*callIntent{ob}, slicesDeleteFunc(other.Intents, func(in *callIntent) bool { return in == ob })...)
	c.Intents = append([]*callIntent{b}, slicesDeleteFunc(c.Intents, func(in *callIntent) bool { return in == b })...)
	g.renumber(c)
	g.renumber(other)
	c.Partner, other.Partner = other, c
	r := &rendezvous{arrived: make(chan struct{}, 2)}
	c.pair, other.pair = r, r
	g.w.Calls = append(g.w.Calls, c, other)
}

func (g *scriptGen) renumber(c *callScript) {
	for i, in := range c.Intents {
		in.N = i
	}
}

// person is a new caller (not in the database) or a returning one.
func (g *scriptGen) person(t *callTenant, isNew bool) *callPerson {
	g.phones++
	p := &callPerson{
		Name: fmt.Sprintf("Caller %d", g.phones), Phone: fmt.Sprintf("+1%03d55%05d", 201+t.N, g.phones%100000), Tenant: t,
	}
	if g.phones >= 100000 {
		p.Phone = fmt.Sprintf("+44%02d7%07d", 10+t.N, g.phones)
	}
	if !isNew {
		p.ID, p.Seeded, p.Points = idOf(g.rng), true, 1000
		g.w.People[p.ID] = p
	}
	return p
}

// script draws one call of person p.
func (g *scriptGen) script(t *callTenant, p *callPerson) *callScript {
	c := &callScript{Tenant: t, Person: p, Platform: g.platforms[g.rng.IntN(len(g.platforms))]}
	c.CallID, c.Shape = g.callID(c.Platform)
	c.Parallel = g.chance(0.2)
	c.Impatient = g.chance(0.25)
	if g.rare(0.03) {
		c.MadeUp = []string{"1", "action_1", "abc123", "booking-1"}[g.rng.IntN(4)]
	}
	if p.Seeded && g.chance(0.7) {
		c.Booking = &seededBooking{ID: idOf(g.rng), Person: p, Slot: g.slot(t)}
		g.w.Appointments[c.Booking.ID] = c.Booking
	}
	add := func(in *callIntent) {
		in.Call, in.N, in.Restate = c, len(c.Intents), g.rare(0.05)
		c.Intents = append(c.Intents, in)
	}
	if !p.Seeded {
		add(&callIntent{Kind: wantCreate})
	}
	want := len(c.Intents) + 1
	for range 100 {
		if len(c.Intents) >= want {
			break
		}
		g.draw(c, add)
	}
	return c
}

// draw adds the intents of c.
func (g *scriptGen) draw(c *callScript, add func(*callIntent)) {
	t, p := c.Tenant, c.Person
	var book *callIntent
	if g.allowed(wantBook) && g.chance(0.45) {
		book = &callIntent{Kind: wantBook}
		if g.rare(0.35) {
			book.At = g.serviceTime(t)
		} else {
			book.Slot, book.Alternative = g.slot(t), g.slot(t)
		}
		if g.rare(0.15) {
			book.ChangeTo = g.slot(t) // the caller changes their mind once it is booked
		}
		add(book)
		switch r := g.rng.Float64(); {
		case r < 0.08 && g.allowed(wantCancel):
			add(&callIntent{Kind: wantCancel, Of: book})
		case r < 0.16 && g.allowed(wantMove) && book.ChangeTo == nil:
			add(&callIntent{Kind: wantMove, Of: book, Slot: g.slot(t)})
		}
	}
	if c.Booking != nil {
		switch r := g.rng.Float64(); {
		case r < 0.15 && g.allowed(wantMove):
			add(&callIntent{Kind: wantMove, Slot: g.slot(t)})
		case r < 0.25 && g.allowed(wantCancel):
			add(&callIntent{Kind: wantCancel})
		}
	}
	if p.Seeded && g.allowed(wantPay) && g.chance(0.3) {
		add(&callIntent{Kind: wantPay, PI: g.intent(p)})
	}
	if p.Seeded && g.allowed(wantLink) && g.chance(0.06) {
		add(&callIntent{Kind: wantLink, PI: g.intent(p)})
	}
	token := func(kind string) string {
		return fmt.Sprintf("%s-%d-%d-%s", kind, len(g.w.Calls), len(c.Intents), hexOf(g.rng, 3))
	}
	if g.allowed(wantMessage) && g.chance(0.25) {
		add(&callIntent{Kind: wantMessage, Token: token("m")})
		if g.chance(0.08) {
			add(&callIntent{Kind: wantMessage, Token: token("m"), Ref: "second"})
		}
	}
	if g.allowed(wantNote) && g.chance(0.25) {
		add(&callIntent{Kind: wantNote, Token: token("n"), Change: g.chance(0.2)})
		if g.chance(0.05) {
			add(&callIntent{Kind: wantNote, Token: token("n"), Ref: "second"})
		}
	}
	if g.allowed(wantPoints) && g.chance(0.25) {
		delta := 1 + g.rng.Int64N(400)
		if p.Seeded && g.chance(0.2) {
			delta = -delta // a redemption (a seeded balance has 1000)
		}
		add(&callIntent{Kind: wantPoints, Token: token("p"), Delta: delta})
	}
	if g.allowed(wantCallback) && g.chance(0.2) {
		// A window of the business's wall clock, in working hours.
		day := t.now().AddDate(0, 0, 2+g.rng.IntN(10))
		wall := func(days, hour int) time.Time {
			return time.Date(day.Year(), day.Month(), day.Day()+days, hour, 0, 0, 0, t.loc)
		}
		h := 9 + g.rng.IntN(6)
		add(&callIntent{
			Kind: wantCallback, Token: token("c"), Change: g.chance(0.2),
			Window: [2]time.Time{wall(0, h), wall(0, h+2)}, Window2: [2]time.Time{wall(1, h), wall(1, h+2)},
		})
	}
}

// slot hands out the next free hour of t's calendar as one practitioner's slot.
func (g *scriptGen) slot(t *callTenant) *callSlot {
	at := t.take(false)
	s := &callSlot{ID: idOf(g.rng), Tenant: t, Start: at, Who: g.rng.IntN(2)}
	g.w.Slots[s.ID] = s
	return s
}

// serviceTime hands out the next free hour at which both practitioners get
// a slot, an hour the location's wall clock names once.
func (g *scriptGen) serviceTime(t *callTenant) *serviceTime {
	at := t.take(true)
	st := &serviceTime{Start: at}
	for i := range t.Practitioners {
		s := &callSlot{ID: idOf(g.rng), Tenant: t, Start: at, Who: i}
		g.w.Slots[s.ID] = s
		st.Slots[i] = s
	}
	return st
}

// intent approves a payment for p.
func (g *scriptGen) intent(p *callPerson) *callPI {
	pi := &callPI{ID: idOf(g.rng), Person: p, Amount: 500 + g.rng.Int64N(20000)}
	g.w.Intents[pi.ID] = pi
	return pi
}

// maxCallID is the longest call id oncecall takes.
const maxCallID = 200

// callID makes a platform's call id in one of the shapes seen: the
// platform's usual one, or a long one (up to the maxCallID characters
// oncecall takes).
func (g *scriptGen) callID(platform string) (id, shape string) {
	if g.rare(0.02) {
		n := maxCallID - 20 + g.rng.IntN(21)
		return strings.Repeat("x", n-32) + hexOf(g.rng, 16), "long"
	}
	switch platform {
	case platVapi:
		return idOf(g.rng), "usual"
	case platRetell:
		return "call_" + hexOf(g.rng, 16), "usual"
	case platElevenLabs:
		return "conv_" + hexOf(g.rng, 13), "usual"
	}
	return hexOf(g.rng, 12), "usual"
}

// bookIntent is the call's booking intent, or nil.
func (c *callScript) bookIntent() *callIntent {
	for _, in := range c.Intents {
		if in.Kind == wantBook {
			return in
		}
	}
	return nil
}

// now is the tenant's wall clock now, as a time in its zone.
func (t *callTenant) now() time.Time { return time.Now().In(t.loc) }

// take returns the next hour of t's calendar. An hour for a booking by
// service at a local time must be one the zone's wall clock names once
// (not in a clock change's repeated or skipped hour).
func (t *callTenant) take(unambiguous bool) time.Time {
	for {
		at := t.next
		t.next = t.next.Add(time.Hour)
		if !unambiguous || wallOnce(at, t.loc) {
			return at
		}
	}
}

// wallOnce reports whether the wall-clock time of at in loc names only at:
// no clock change within two hours either side.
func wallOnce(at time.Time, loc *time.Location) bool {
	_, off := at.In(loc).Zone()
	for _, d := range []time.Duration{-2 * time.Hour, 2 * time.Hour} {
		if _, o := at.Add(d).In(loc).Zone(); o != off {
			return false
		}
	}
	return true
}

// idOf is a random UUID drawn from rng, so that a seed gives the same ids.
func idOf(rng *rand.Rand) string {
	var b [16]byte
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	id, _ := uuid.FromBytes(b[:]) // 16 bytes: cannot fail
	id[6] = id[6]&0x0f | 0x40     // version 4
	id[8] = id[8]&0x3f | 0x80     // RFC 4122 variant
	return id.String()
}

func hexOf(rng *rand.Rand, n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 2*n)
	for i := range b {
		b[i] = digits[rng.IntN(16)]
	}
	return string(b)
}

func slicesDeleteFunc[T any](s []T, del func(T) bool) []T {
	out := s[:0:0]
	for _, v := range s {
		if !del(v) {
			out = append(out, v)
		}
	}
	return out
}
