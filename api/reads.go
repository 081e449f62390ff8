package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/booking"
	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/schedule"
	"github.com/oncecall/oncecall/wire"
)

// reads are the REST reads by their operationId in openapi.yaml, which
// gives their routes (routes.go). Each holds the tenant's share of the
// database pool for the whole request.
func (s *Server) reads() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"getAction":            s.getAction,
		"listSlots":            s.listSlots,
		"listAppointments":     s.listAppointments,
		"getAppointment":       s.getAppointment,
		"listPaymentIntents":   s.listPaymentIntents,
		"getPaymentIntent":     s.getPaymentIntent,
		"getMessage":           s.getMessage,
		"listMessageTemplates": s.listTemplates,
		"findCustomers":        s.findCustomers,
		"getCustomer":          s.getCustomer,
		"listCallbacks":        s.listCallbacks,
		"listWaitlist":         s.listWaitlist,
		"listLocations":        s.listLocations,
		"listPractitioners":    s.listPractitioners,
		"listServices":         s.listServices,
	}
}

// localAppointment is an appointment with its times said on the tenant's
// clock in its slot's timezone: its location's, with who and where, or the
// tenant's for a slot of the single calendar, which keeps the shape it had.
type localAppointment struct {
	wire.Appointment
	schedule.Local
	PractitionerID string `json:"practitioner_id,omitempty"`
	Practitioner   string `json:"practitioner,omitempty"`
	LocationID     string `json:"location_id,omitempty"`
	Location       string `json:"location,omitempty"`
	Address        string `json:"address,omitempty"`
	Timezone       string `json:"timezone,omitempty"`
}

// tenantClock returns how the tenant says its times: its timezone and
// locale. A zone name the zone database lacks or a locale oncecall does not
// speak (set outside oncecall) is read as UTC or en-GB and logged, and the
// answers say so: a caller is better served by correct UTC times than by
// no answer.
func (s *Server) tenantClock(ctx context.Context, tenant uuid.UUID) (schedule.Clock, error) {
	clock, ok, err := s.cfg.Store.TenantClock(ctx, tenant)
	if err != nil {
		return schedule.Clock{}, db.Fault(err)
	}
	if !ok {
		logFrom(ctx).Warn().Str("tenant_id", tenant.String()).Str("timezone", clock.Zone).Str("locale", string(clock.Locale)).
			Msg("tenant timezone or locale unknown; using UTC or en-GB")
	}
	return clock, nil
}

func localAppointments(list []oncecall.PlacedAppointment, tenant schedule.Clock, now time.Time) []localAppointment {
	out := make([]localAppointment, len(list))
	for i, a := range list {
		out[i] = localAppointment{
			Appointment: wire.FromAppointment(a.Appointment),
			Local:       tenant.In(a.Place.Timezone).Localize(a.StartsAt, a.EndsAt, now),
		}
		if p := a.Place; p.Catalog() {
			out[i].PractitionerID, out[i].Practitioner = p.PractitionerID.String(), p.Practitioner
			out[i].LocationID, out[i].Location, out[i].Address, out[i].Timezone = p.LocationID.String(), p.Location, p.Address, p.Timezone
		}
	}
	return out
}

// queryParams reads a read endpoint's query: each parameter at most once,
// none but those allowed. A bad parameter is a 400 naming it.
func queryParams(r *http.Request, allowed ...string) (map[string]string, error) {
	if err := wellFormedQuery(r.URL.RawQuery); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, values := range r.URL.Query() {
		known := false
		for _, a := range allowed {
			known = known || a == name
		}
		if !known {
			if len(name) > 64 {
				name = name[:64]
			}
			return nil, fault.Field(name, "is not a query parameter of this endpoint (it takes %s)", strings.Join(allowed, ", "))
		}
		if len(values) != 1 {
			return nil, fault.Field(name, "must be given once")
		}
		out[name] = values[0]
	}
	return out, nil
}

// wellFormedQuery refuses a query string that would not parse whole (a ';'
// between parameters, a bad %-escape), naming the parameter: url.Query
// drops such a part silently, and a filter or cursor the caller gave must
// never be read as absent.
func wellFormedQuery(raw string) error {
	if raw == "" {
		return nil
	}
	for part := range strings.SplitSeq(raw, "&") {
		name, value, _ := strings.Cut(part, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		name = op.Shorten(name, 64)
		if strings.Contains(part, ";") {
			return fault.Field(name, "must not hold a ';': separate query parameters with '&' and encode a ';' as %%3B")
		}
		if _, err := url.QueryUnescape(value); err != nil {
			return fault.Field(name, "is not a valid URL-encoded value")
		}
	}
	return nil
}

// findCustomers answers GET /v1/customers?phone=: the tenant's customers
// with that phone number (none or one).
func (s *Server) findCustomers(w http.ResponseWriter, r *http.Request) {
	q, err := queryParams(r, "phone")
	if err != nil {
		writeError(w, r, err)
		return
	}
	phone, ok := q["phone"]
	if !ok {
		writeError(w, r, fault.Field("phone", "is required: GET /v1/customers?phone=%%2B442079460958"))
		return
	}
	if err := phoneParam(&phone); err != nil {
		writeError(w, r, err)
		return
	}
	found := []wire.Customer{}
	c, err := s.cfg.Store.CustomerByPhone(r.Context(), tenantFrom(r.Context()).ID, phone)
	switch {
	case err == nil:
		found = append(found, wire.FromCustomer(c))
	case !errors.Is(err, db.ErrNotFound):
		writeError(w, r, db.Fault(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"customers": found})
}

// phoneParam normalises a phone number given as a query parameter to
// E.164. An unencoded + arrives as a space; a phone number never starts
// with one.
func phoneParam(phone *string) error {
	if trimmed := strings.TrimLeft(*phone, " "); trimmed != *phone && trimmed != "" && trimmed[0] >= '0' && trimmed[0] <= '9' {
		*phone = "+" + trimmed
	}
	return op.Phone("phone", phone)
}

// maxCallbacks bounds GET /v1/callbacks.
const maxCallbacks = 100

// listCallbacks answers GET /v1/callbacks?customer_id= or ?phone=: the
// tenant's callbacks of a customer, or to a number, requested and
// cancelled, by window (at most maxCallbacks).
func (s *Server) listCallbacks(w http.ResponseWriter, r *http.Request) {
	q, err := queryParams(r, "customer_id", "phone")
	if err != nil {
		writeError(w, r, err)
		return
	}
	customer, phone := uuid.Nil, q["phone"]
	switch _, byCustomer := q["customer_id"]; {
	case byCustomer == (phone != ""):
		err = fault.Field("customer_id", "or phone is required, not both: GET /v1/callbacks?customer_id=...")
	case byCustomer:
		var id string
		if id, err = requiredCustomer(q); err == nil {
			customer = uuid.MustParse(id)
		}
	default:
		err = phoneParam(&phone)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	tenant := tenantFrom(r.Context()).ID
	clock, err := s.tenantClock(r.Context(), tenant)
	if err != nil {
		writeError(w, r, err)
		return
	}
	list, err := s.cfg.Store.CallbacksOf(r.Context(), tenant, customer, phone, maxCallbacks)
	if err != nil {
		writeError(w, r, db.Fault(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"callbacks": callback.Views(list, clock.Locale, time.Now())})
}

// Bounds of GET /v1/waitlist.
const (
	defaultWaitlist = 20
	maxWaitlist     = 100
)

// listWaitlist answers GET /v1/waitlist?status=&limit=&after=: the
// tenant's waitlist entries, newest first, all or of one status (active or
// cancelled), a page of at most limit after the entry after (the last one
// of the page before).
func (s *Server) listWaitlist(w http.ResponseWriter, r *http.Request) {
	q, err := queryParams(r, "status", "limit", "after")
	if err != nil {
		writeError(w, r, err)
		return
	}
	status := oncecall.WaitlistStatus(q["status"])
	if _, ok := q["status"]; ok && status != oncecall.WaitlistActive && status != oncecall.WaitlistCancelled {
		writeError(w, r, fault.Field("status", "must be active or cancelled"))
		return
	}
	limit, after := defaultWaitlist, uuid.Nil
	if v, ok := q["limit"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxWaitlist {
			writeError(w, r, fault.Field("limit", "must be an integer from 1 to %d", maxWaitlist))
			return
		}
		limit = n
	}
	if v, ok := q["after"]; ok {
		if err := op.ID("after", &v); err != nil {
			writeError(w, r, err)
			return
		}
		after = uuid.MustParse(v)
	}
	// One more than asked tells whether there are more.
	list, err := s.cfg.Store.Waitlist(r.Context(), tenantFrom(r.Context()).ID, status, after, limit+1)
	if err != nil {
		writeError(w, r, db.Fault(err))
		return
	}
	more := len(list) > limit
	if more {
		list = list[:limit]
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": booking.WaitlistViews(list), "has_more": more})
}

// Bounds of GET /v1/appointments.
const (
	defaultAppointments = 20
	maxAppointments     = 100
)

// listAppointments answers GET /v1/appointments?customer_id=&from=&limit=:
// a customer's active appointments from a time on, soonest first.
func (s *Server) listAppointments(w http.ResponseWriter, r *http.Request) {
	q, err := queryParams(r, "customer_id", "from", "limit")
	if err != nil {
		writeError(w, r, err)
		return
	}
	customer, err := requiredCustomer(q)
	if err != nil {
		writeError(w, r, err)
		return
	}
	now := time.Now()
	from, limit := now, defaultAppointments
	if v, ok := q["from"]; ok {
		if err := op.Time("from", &v); err != nil {
			writeError(w, r, err)
			return
		}
		from, _ = time.Parse(time.RFC3339Nano, v)
	}
	if v, ok := q["limit"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxAppointments {
			writeError(w, r, fault.Field("limit", "must be an integer from 1 to %d", maxAppointments))
			return
		}
		limit = n
	}
	tenant := tenantFrom(r.Context()).ID
	clock, err := s.tenantClock(r.Context(), tenant)
	if err != nil {
		writeError(w, r, err)
		return
	}
	// One more than asked tells whether there are more.
	list, err := s.customerAppointments(r.Context(), tenant, uuid.MustParse(customer), from, limit+1)
	if err != nil {
		writeError(w, r, db.Fault(err))
		return
	}
	more := len(list) > limit
	if more {
		list = list[:limit]
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"timezone": clock.Zone, "appointments": localAppointments(list, clock, now), "has_more": more,
	})
}

// requiredCustomer is the customer_id a customer's listing requires among
// its query parameters, checked to be an id.
func requiredCustomer(q map[string]string) (string, error) {
	customer, ok := q["customer_id"]
	if !ok {
		return "", fault.Field("customer_id", "is required")
	}
	if err := op.ID("customer_id", &customer); err != nil {
		return "", err
	}
	return customer, nil
}
