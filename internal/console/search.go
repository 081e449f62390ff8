package console

import (
	"errors"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/phone"
)

type searchData struct {
	Now       time.Time
	Q         string
	Searched  bool
	ByID      []row
	ByKey     []row
	ByCall    []row
	ByRef     []row
	Customers []customerHit
	ByCust    []row
}

type customerHit struct {
	Tenant string
	Name   string
}

// retired is the suffix a retired idempotency key carries (key~action id).
var retired = regexp.MustCompile(`~[0-9a-f-]{36}$`)

var keyHash = regexp.MustCompile(`^[0-9a-fA-F]{12}$`)

// searchPage finds what a person knows: a customer's phone number, e-mail
// address or name (every operation of hers: what names her, her
// appointments, payment intents and callbacks), an action id, a voice
// call's id, an idempotency key or its key_hash, a provider's reference.
// Every lookup is an index probe (migration 0034): see docs/console.md.
func (c *Console) searchPage(w http.ResponseWriter, r *http.Request, s session) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	d := searchData{Now: c.now(), Q: q}
	p := page{Title: "Search", Session: s, Data: &d}
	if q == "" {
		c.render(w, r, http.StatusOK, "search", p)
		return
	}
	if len(q) > 255 {
		p.Error = "Search for at most 255 characters."
		c.render(w, r, http.StatusBadRequest, "search", p)
		return
	}
	d.Searched = true
	if err := c.search(r, s, &d); err != nil {
		c.internal(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "search", p)
}

func (c *Console) search(r *http.Request, s session, d *searchData) error {
	ctx, q := r.Context(), d.Q
	ts, err := c.tenants(r, s)
	if err != nil {
		return err
	}
	tenantIDs := []uuid.UUID{s.TenantID}
	if !s.Scoped() {
		if tenantIDs, err = c.cfg.Store.TenantIDs(ctx); err != nil {
			return err
		}
	}
	var terms []string
	cq := db.CustomerQuery{Words: nameQuery(q)}
	id, idErr := uuid.Parse(q)
	if idErr == nil {
		a, err := c.cfg.Store.ActionAnyTenant(ctx, id)
		switch {
		case err == nil && s.sees(a.TenantID):
			d.ByID = c.rows(r, []oncecall.Action{a}, ts)
		case err != nil && !errors.Is(err, db.ErrNotFound):
			return err
		}
		cq.IDs = []uuid.UUID{id}
		terms = append(terms, db.SubjectTerm(id.String())) // an appointment's, payment intent's or callback's id
	}
	if email := q; strings.Contains(q, "@") && op.Email("q", &email) == nil {
		cq.Email = email
		terms = append(terms, db.SubjectTerm(email))
	}
	more, err := c.searchCustomers(r, d, q, cq, tenantIDs, ts)
	if err != nil {
		return err
	}
	terms = append(terms, more...)
	call := q
	if platform, rest, ok := strings.Cut(q, ":"); ok && platformNames[platform] != "" {
		call = rest
	}
	terms = append(terms, db.CallTerm(call), db.KeyTerm(idem.KeyHash(q)))
	if keyHash.MatchString(q) {
		terms = append(terms, db.KeyTerm(strings.ToLower(q)))
	}
	found, err := c.cfg.Store.SearchActions(ctx, tenantIDs, terms, 200)
	if err != nil {
		return err
	}
	byRef, err := c.cfg.Store.ActionsOfProviderRef(ctx, tenantIDs, q)
	if err != nil {
		return err
	}
	d.ByRef = c.rows(r, byRef, ts)
	var byKey, byCall, byCust []oncecall.Action
	for _, a := range found {
		h := idem.KeyHash(retired.ReplaceAllString(a.Key, ""))
		switch {
		case a.ID == id && idErr == nil:
		case h == idem.KeyHash(q) || strings.EqualFold(h, q):
			byKey = append(byKey, a)
		case a.CallID != "" && (a.CallID == call) && (call == q || a.CallPlatform+":"+a.CallID == q):
			byCall = append(byCall, a)
		default:
			byCust = append(byCust, a)
		}
	}
	d.ByKey, d.ByCall, d.ByCust = c.rows(r, byKey, ts), c.rows(r, byCall, ts), c.rows(r, byCust, ts)
	return nil
}

// searchCustomers finds the customers q names, lists them in d, and
// returns the terms that find their operations.
func (c *Console) searchCustomers(r *http.Request, d *searchData, q string, cq db.CustomerQuery, tenantIDs []uuid.UUID, ts tenants) ([]string, error) {
	ctx := r.Context()
	var terms []string
	var customers []oncecall.Customer
	var tenantOf []uuid.UUID
	// A number is read in each tenant's country ("(212) 555-0142" is a
	// New York clinic's number there, not a London one's): the tenants
	// whose countries read it as the same E.164 number are searched
	// together, by the customers' phones (customers_phone) and callbacks'.
	for e164, group := range byPhone(q, tenantIDs, ts) {
		gq := cq
		if gq.Phone = e164; e164 != "" {
			terms = append(terms, db.SubjectTerm(e164))
			links, err := c.cfg.Store.CallbacksToPhone(ctx, group, e164)
			if err != nil {
				return nil, err
			}
			for _, l := range links {
				terms = append(terms, db.SubjectTerm(l))
			}
		}
		found, of, err := c.cfg.Store.SearchCustomers(ctx, group, gq)
		if err != nil {
			return nil, err
		}
		customers, tenantOf = append(customers, found...), append(tenantOf, of...)
	}
	for i, cu := range customers {
		d.Customers = append(d.Customers, customerHit{Tenant: ts.of(tenantOf[i]).Name, Name: cmpOr(cu.Name, "a customer without a name")})
		terms = append(terms, db.SubjectTerm(cu.ID.String()))
		if cu.Phone != "" {
			terms = append(terms, db.SubjectTerm(cu.Phone))
		}
		if cu.Email != "" {
			terms = append(terms, db.SubjectTerm(cu.Email))
		}
		links, err := c.cfg.Store.CustomerLinks(ctx, tenantOf[i], cu.ID)
		if err != nil {
			return nil, err
		}
		for _, l := range links {
			terms = append(terms, db.SubjectTerm(l))
		}
	}
	return terms, nil
}

// nameQuery is the words of q as prefixes for to_tsquery('simple'): "mar
// lop" is "mar:* & lop:*"; only letters and digits are kept, so nothing
// of q is read as query syntax. Empty when q has no word of two letters.
func nameQuery(q string) string {
	var words []string
	for _, f := range strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len([]rune(f)) >= 2 && len(words) < 5 {
			words = append(words, f+":*")
		}
	}
	return strings.Join(words, " & ")
}

// byPhone groups tenants by what q is as a phone number in each one's
// country: its E.164 form, or "" where it is none.
func byPhone(q string, tenantIDs []uuid.UUID, ts tenants) map[string][]uuid.UUID {
	read := map[string]string{} // region -> E.164
	out := map[string][]uuid.UUID{}
	for _, id := range tenantIDs {
		region := ts.of(id).Region
		e164, ok := read[region]
		if !ok {
			e164, _ = phone.Parse(q, region)
			read[region] = e164
		}
		out[e164] = append(out[e164], id)
	}
	return out
}
