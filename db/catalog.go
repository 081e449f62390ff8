package db

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db/dbsqlc"
)

// CreateLocation inserts a location; taken is true (and nothing is written)
// when the tenant has a location of that name, in any case.
func (q queries) CreateLocation(ctx context.Context, l oncecall.NewLocation) (loc oncecall.Location, taken bool, err error) {
	id, err := uuid.NewV7()
	if err != nil {
		return oncecall.Location{}, false, err
	}
	row, err := q.q.CreateLocation(ctx, dbsqlc.CreateLocationParams{
		ID: id, TenantID: l.TenantID, Name: l.Name, Timezone: l.Timezone, Address: l.Address,
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return oncecall.Location{}, true, nil
	}
	if err != nil {
		return oncecall.Location{}, false, err
	}
	return location(row), false, nil
}

// LocationByName is the tenant's location of that name (in any case).
func (q queries) LocationByName(ctx context.Context, tenant uuid.UUID, name string) (oncecall.Location, error) {
	row, err := q.q.LocationByName(ctx, dbsqlc.LocationByNameParams{TenantID: tenant, Name: name})
	if err != nil {
		return oncecall.Location{}, notFound(err)
	}
	return location(row), nil
}

// LocationByID is one of the tenant's locations.
func (q queries) LocationByID(ctx context.Context, tenant, id uuid.UUID) (oncecall.Location, error) {
	row, err := q.q.LocationByID(ctx, dbsqlc.LocationByIDParams{TenantID: tenant, ID: id})
	if err != nil {
		return oncecall.Location{}, notFound(err)
	}
	return location(row), nil
}

// ListLocations lists the tenant's locations by name.
func (q queries) ListLocations(ctx context.Context, tenant uuid.UUID) ([]oncecall.Location, error) {
	rows, err := q.q.ListLocations(ctx, tenant)
	if err != nil {
		return nil, err
	}
	out := make([]oncecall.Location, len(rows))
	for i, r := range rows {
		out[i] = location(r)
	}
	return out, nil
}

func location(r dbsqlc.Location) oncecall.Location {
	return oncecall.Location{ID: r.ID, TenantID: r.TenantID, Name: r.Name, Timezone: r.Timezone, Address: r.Address, CreatedAt: r.CreatedAt.UTC()}
}

// CreateService inserts a service; taken is true (and nothing is written)
// when the tenant has a service of that name.
func (q queries) CreateService(ctx context.Context, s oncecall.NewService) (svc oncecall.Service, taken bool, err error) {
	id, err := uuid.NewV7()
	if err != nil {
		return oncecall.Service{}, false, err
	}
	p := dbsqlc.CreateServiceParams{
		ID: id, TenantID: s.TenantID, Name: s.Name,
		DurationMinutes: int32(s.DurationMinutes), BufferMinutes: int32(s.BufferMinutes), //nolint:gosec // bounded by the operation and the table's checks
	}
	if s.HasPrice {
		// The table keeps the code lower-case; oncecall speaks it upper-case.
		currency := strings.ToLower(s.Currency)
		p.PriceAmount, p.Currency = &s.PriceAmount, &currency
	}
	row, err := q.q.CreateService(ctx, p)
	if errors.Is(err, pgx.ErrNoRows) {
		return oncecall.Service{}, true, nil
	}
	if err != nil {
		return oncecall.Service{}, false, err
	}
	return service(row), false, nil
}

// ServiceByName is the tenant's service of that name (in any case).
func (q queries) ServiceByName(ctx context.Context, tenant uuid.UUID, name string) (oncecall.Service, error) {
	row, err := q.q.ServiceByName(ctx, dbsqlc.ServiceByNameParams{TenantID: tenant, Name: name})
	if err != nil {
		return oncecall.Service{}, notFound(err)
	}
	return service(row), nil
}

// ServiceByID is one of the tenant's services; ErrNotFound when it has
// none by that id.
func (q queries) ServiceByID(ctx context.Context, tenant, id uuid.UUID) (oncecall.Service, error) {
	row, err := q.q.ServiceByID(ctx, dbsqlc.ServiceByIDParams{TenantID: tenant, ID: id})
	if err != nil {
		return oncecall.Service{}, notFound(err)
	}
	return service(row), nil
}

// CatalogFilter narrows a listing of services or practitioners; a zero id
// does not narrow.
type CatalogFilter struct {
	PractitionerID uuid.UUID
	LocationID     uuid.UUID
	ServiceID      uuid.UUID
}

// ListServices lists the tenant's services by name: with a practitioner or
// a location, those a practitioner (that one) performs at a location (that
// one) they work at. The filter's ServiceID is not used.
func (q queries) ListServices(ctx context.Context, tenant uuid.UUID, f CatalogFilter) ([]oncecall.Service, error) {
	rows, err := q.q.ListServices(ctx, dbsqlc.ListServicesParams{TenantID: tenant, PractitionerID: ptr(f.PractitionerID), LocationID: ptr(f.LocationID)})
	if err != nil {
		return nil, err
	}
	out := make([]oncecall.Service, len(rows))
	for i, r := range rows {
		out[i] = service(r)
	}
	return out, nil
}

func service(r dbsqlc.Service) oncecall.Service {
	s := oncecall.Service{
		ID: r.ID, TenantID: r.TenantID, Name: r.Name, DurationMinutes: int(r.DurationMinutes), BufferMinutes: int(r.BufferMinutes),
		CreatedAt: r.CreatedAt.UTC(),
	}
	if r.PriceAmount != nil && r.Currency != nil {
		s.HasPrice, s.PriceAmount, s.Currency = true, *r.PriceAmount, strings.ToUpper(*r.Currency)
	}
	return s
}

// MissingCatalogIDs returns the given location and service ids the tenant
// has no location or service of.
func (q queries) MissingCatalogIDs(ctx context.Context, tenant uuid.UUID, locations, services []uuid.UUID) (missingLocations, missingServices []uuid.UUID, err error) {
	if len(locations) > 0 {
		if missingLocations, err = q.q.MissingLocations(ctx, dbsqlc.MissingLocationsParams{TenantID: tenant, Ids: locations}); err != nil {
			return nil, nil, err
		}
	}
	if len(services) > 0 {
		if missingServices, err = q.q.MissingServices(ctx, dbsqlc.MissingServicesParams{TenantID: tenant, Ids: services}); err != nil {
			return nil, nil, err
		}
	}
	return missingLocations, missingServices, nil
}

// CreatePractitioner inserts a practitioner and links them to their
// locations and services, which must be the tenant's (see
// MissingCatalogIDs); taken is true (and nothing is written) when the
// tenant has a practitioner of that name.
func (q queries) CreatePractitioner(ctx context.Context, p oncecall.NewPractitioner) (pr oncecall.Practitioner, taken bool, err error) {
	id, err := uuid.NewV7()
	if err != nil {
		return oncecall.Practitioner{}, false, err
	}
	row, err := q.q.CreatePractitioner(ctx, dbsqlc.CreatePractitionerParams{ID: id, TenantID: p.TenantID, Name: p.Name})
	if errors.Is(err, pgx.ErrNoRows) {
		return oncecall.Practitioner{}, true, nil
	}
	if err != nil {
		return oncecall.Practitioner{}, false, err
	}
	if len(p.LocationIDs) > 0 {
		if err := q.q.LinkPractitionerLocations(ctx, dbsqlc.LinkPractitionerLocationsParams{TenantID: p.TenantID, PractitionerID: id, LocationIds: p.LocationIDs}); err != nil {
			return oncecall.Practitioner{}, false, err
		}
	}
	if len(p.ServiceIDs) > 0 {
		if err := q.q.LinkPractitionerServices(ctx, dbsqlc.LinkPractitionerServicesParams{TenantID: p.TenantID, PractitionerID: id, ServiceIds: p.ServiceIDs}); err != nil {
			return oncecall.Practitioner{}, false, err
		}
	}
	return oncecall.Practitioner{
		ID: row.ID, TenantID: row.TenantID, Name: row.Name, CreatedAt: row.CreatedAt.UTC(),
		LocationIDs: sortedIDs(p.LocationIDs), ServiceIDs: sortedIDs(p.ServiceIDs),
	}, false, nil
}

// PractitionerByName is the tenant's practitioner of that name (in any
// case), without their locations and services.
func (q queries) PractitionerByName(ctx context.Context, tenant uuid.UUID, name string) (oncecall.Practitioner, error) {
	row, err := q.q.PractitionerByName(ctx, dbsqlc.PractitionerByNameParams{TenantID: tenant, Name: name})
	if err != nil {
		return oncecall.Practitioner{}, notFound(err)
	}
	return oncecall.Practitioner{ID: row.ID, TenantID: row.TenantID, Name: row.Name, CreatedAt: row.CreatedAt.UTC()}, nil
}

// ListPractitioners lists the tenant's practitioners by name with their
// locations and services: with a location or a service, those who work
// there or perform it. The filter's PractitionerID is not used.
func (q queries) ListPractitioners(ctx context.Context, tenant uuid.UUID, f CatalogFilter) ([]oncecall.Practitioner, error) {
	rows, err := q.q.ListPractitioners(ctx, dbsqlc.ListPractitionersParams{TenantID: tenant, LocationID: ptr(f.LocationID), ServiceID: ptr(f.ServiceID)})
	if err != nil {
		return nil, err
	}
	out := make([]oncecall.Practitioner, len(rows))
	for i, r := range rows {
		out[i] = oncecall.Practitioner{
			ID: r.ID, TenantID: tenant, Name: r.Name, CreatedAt: r.CreatedAt.UTC(),
			LocationIDs: sortedIDs(r.LocationIds), ServiceIDs: sortedIDs(r.ServiceIds),
		}
	}
	return out, nil
}

// sortedIDs is ids in the order PostgreSQL sorts uuids (bytewise), never nil.
func sortedIDs(ids []uuid.UUID) []uuid.UUID {
	out := append([]uuid.UUID{}, ids...)
	slices.SortFunc(out, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	return out
}

// PractitionerSlots says where a practitioner's new slots go.
type PractitionerSlots struct {
	TenantID       uuid.UUID
	PractitionerID uuid.UUID
	LocationID     uuid.UUID
	// Resource is the slots' resource: the practitioner's name.
	Resource string
}

// PractitionerWorksAt reports whether the tenant's practitioner works at
// the location.
func (q queries) PractitionerWorksAt(ctx context.Context, tenant, practitioner, location uuid.UUID) (bool, error) {
	return q.q.PractitionerWorksAt(ctx, dbsqlc.PractitionerWorksAtParams{TenantID: tenant, PractitionerID: practitioner, LocationID: location})
}

// LockPractitionerSlots serialises the slot creations of a practitioner (at
// every location) until the transaction ends: it locks the practitioner's row.
func (tx *Tx) LockPractitionerSlots(ctx context.Context, tenant, practitioner uuid.UUID) error {
	return tx.q.LockPractitionerSlots(ctx, dbsqlc.LockPractitionerSlotsParams{TenantID: tenant, PractitionerID: practitioner})
}

// InsertPractitionerSlots creates the given times, which must not overlap
// each other, as slots of a practitioner at a location, except those that
// overlap a slot the practitioner has already (at any location). The
// caller holds LockPractitionerSlots. It returns the slots created.
func (tx *Tx) InsertPractitionerSlots(ctx context.Context, p PractitionerSlots, times []SlotTime) ([]oncecall.Slot, error) {
	args := dbsqlc.InsertPractitionerSlotsParams{
		TenantID: p.TenantID, Resource: p.Resource, PractitionerID: &p.PractitionerID, LocationID: &p.LocationID,
		Ids: make([]uuid.UUID, len(times)), Starts: make([]time.Time, len(times)), Ends: make([]time.Time, len(times)),
	}
	for i, t := range times {
		id, err := uuid.NewV7()
		if err != nil {
			return nil, err
		}
		args.Ids[i], args.Starts[i], args.Ends[i] = id, t.StartsAt, t.EndsAt
	}
	rows, err := tx.q.InsertPractitionerSlots(ctx, args)
	if err != nil {
		return nil, err
	}
	out := make([]oncecall.Slot, len(rows))
	for i, r := range rows {
		out[i] = oncecall.Slot{
			ID: r.ID, StartsAt: r.StartsAt.UTC(), EndsAt: r.EndsAt.UTC(), Resource: p.Resource, Available: true,
			PractitionerID: p.PractitionerID, LocationID: p.LocationID,
		}
	}
	return out, nil
}

// PractitionerSlot is a slot of a practitioner, with its location.
type PractitionerSlot struct {
	ID         uuid.UUID
	StartsAt   time.Time
	EndsAt     time.Time
	LocationID uuid.UUID
}

// PractitionerSlotsOverlapping lists the practitioner's slots (at any
// location) that overlap [start, end), in start order.
func (q queries) PractitionerSlotsOverlapping(ctx context.Context, tenant, practitioner uuid.UUID, start, end time.Time) ([]PractitionerSlot, error) {
	rows, err := q.q.PractitionerSlotsOverlapping(ctx, dbsqlc.PractitionerSlotsOverlappingParams{
		TenantID: tenant, PractitionerID: &practitioner, Starts: start, Ends: end,
	})
	if err != nil {
		return nil, err
	}
	out := make([]PractitionerSlot, len(rows))
	for i, r := range rows {
		out[i] = PractitionerSlot{ID: r.ID, StartsAt: r.StartsAt.UTC(), EndsAt: r.EndsAt.UTC(), LocationID: deref(r.LocationID)}
	}
	return out, nil
}

// PractitionerByID is one of the tenant's practitioners, without their
// locations and services.
func (q queries) PractitionerByID(ctx context.Context, tenant, id uuid.UUID) (oncecall.Practitioner, error) {
	row, err := q.q.PractitionerByID(ctx, dbsqlc.PractitionerByIDParams{TenantID: tenant, ID: id})
	if err != nil {
		return oncecall.Practitioner{}, notFound(err)
	}
	return oncecall.Practitioner{ID: row.ID, TenantID: row.TenantID, Name: row.Name, CreatedAt: row.CreatedAt.UTC()}, nil
}

// BookingZones are the timezones a local time of a booking of service is
// read in: location's (uuid.Nil: none named), else those of the tenant's
// locations where a practitioner who performs the service works (only
// practitioner, unless uuid.Nil), without repeats.
func (q queries) BookingZones(ctx context.Context, tenant, service, practitioner, location uuid.UUID) ([]string, error) {
	return q.q.BookingZones(ctx, dbsqlc.BookingZonesParams{
		TenantID: tenant, ServiceID: service, PractitionerID: ptr(practitioner), LocationID: ptr(location),
	})
}
