// Package catalog declares the operations of a business with more than one
// calendar: its locations, practitioners and services, created through the
// idempotency core like every write. Slots of a practitioner at a location
// are created by slot.create and slot.schedule (internal/booking).
package catalog

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/schedule"
)

// Rejection reasons.
const (
	LocationExists     = "LOCATION_EXISTS"
	PractitionerExists = "PRACTITIONER_EXISTS"
	ServiceExists      = "SERVICE_EXISTS"
	LocationNotFound   = "LOCATION_NOT_FOUND"
	ServiceNotFound    = "SERVICE_NOT_FOUND"
)

// Bounds of the catalog's inputs.
const (
	maxName    = 200
	maxAddress = 500
	// MaxLinks is the most locations, and the most services, one
	// practitioner may be created with.
	MaxLinks = 100
	// MaxBufferMinutes is the longest buffer after a service.
	MaxBufferMinutes = 240
)

// Operations returns the catalog operations.
func Operations() []op.Operation { return family.Operations() }

// family collects the operations as they are defined (op.Family).
var family op.Family

// LocationInput is the input of location.create.
type LocationInput struct {
	Name     string `json:"name" required:"true" minLength:"1" maxLength:"200" desc:"The location's name, unique in the business in any case, e.g. Downtown."`
	Timezone string `json:"timezone" maxLength:"64" desc:"Optional: the IANA timezone of the location, e.g. America/New_York (default: the tenant's). Its practitioners' schedules are read in it and its times are said in it."`
	Address  string `json:"address" maxLength:"500" desc:"Optional: the address as it is said to a caller, e.g. 12 High Street, Leeds."`
}

// CreateLocation adds a location. It is not offered to voice agents.
var CreateLocation = family.Add(op.Define(op.Spec[LocationInput]{
	Name:    "location.create",
	Label:   "New location",
	Version: 1,
	Logic:   createLocationOp{},
	Say: op.Phrases{
		Confirmed: "The location is created.",
		Rejected: map[string]string{
			LocationExists: "The business already has a location of that name; nothing was created.",
			"":             "The location was not created.",
		},
		Pending: "The location is NOT confirmed yet; its result is unknown.",
	},
}))

// createLocationOp is the logic of CreateLocation.
type createLocationOp struct{}

func (createLocationOp) Normalize(in *LocationInput) error {
	if err := op.First(op.Text("name", &in.Name, maxName, true), op.Text("address", &in.Address, maxAddress, false)); err != nil {
		return err
	}
	if in.Timezone = strings.TrimSpace(in.Timezone); in.Timezone != "" {
		if _, err := schedule.ParseZone(in.Timezone); err != nil {
			return fault.Field("timezone", "must be an IANA timezone name such as Europe/London")
		}
	}
	return nil
}

func (createLocationOp) Execute(ctx context.Context, tx *db.Tx, x idem.Exec, in LocationInput) (idem.Result, error) {
	zone := in.Timezone
	if zone == "" {
		var err error
		if zone, err = tx.TenantTimezone(ctx, x.TenantID); err != nil {
			return idem.Result{}, err
		}
		if _, err := schedule.ParseZone(zone); err != nil {
			// A rollback: nothing is claimed, the caller can name a zone.
			return idem.Result{}, fault.Field("timezone", "is required: the tenant's timezone %q is not in the zone database", zone)
		}
	}
	l, taken, err := tx.CreateLocation(ctx, oncecall.NewLocation{TenantID: x.TenantID, Name: in.Name, Timezone: zone, Address: in.Address})
	if err != nil {
		return idem.Result{}, err
	}
	if taken {
		existing, err := tx.LocationByName(ctx, x.TenantID, in.Name)
		if err != nil {
			return idem.Result{}, err
		}
		return op.Reject(LocationExists, map[string]string{"location_id": existing.ID.String()})
	}
	return op.Confirm(http.StatusCreated, l.ID.String(), LocationViewOf(l))
}

// ServiceInput is the input of service.create.
type ServiceInput struct {
	Name            string     `json:"name" required:"true" minLength:"1" maxLength:"200" desc:"The service's name as a caller asks for it, unique in the business in any case, e.g. Cleaning."`
	DurationMinutes op.Integer `json:"duration_minutes" required:"true" minimum:"5" maximum:"1440" desc:"How long the service takes, in minutes."`
	BufferMinutes   op.Integer `json:"buffer_minutes,omitzero" minimum:"0" maximum:"240" desc:"Optional: minutes kept free after the service (default 0): a booking needs a slot at least duration_minutes + buffer_minutes long."`
	PriceAmount     op.Integer `json:"price_amount,omitzero" minimum:"0" maximum:"9007199254740991" desc:"Optional: the price in minor units of currency, e.g. 8000 for 80.00 USD; with currency."`
	Currency        string     `json:"currency" maxLength:"3" desc:"ISO 4217 currency code of price_amount, e.g. USD; required with price_amount, refused without it."`
}

// CreateService adds a service. It is not offered to voice agents.
var CreateService = family.Add(op.Define(op.Spec[ServiceInput]{
	Name:    "service.create",
	Label:   "New service",
	Version: 1,
	Logic:   createServiceOp{},
	Say: op.Phrases{
		Confirmed: "The service is created.",
		Rejected: map[string]string{
			ServiceExists: "The business already has a service of that name; nothing was created.",
			"":            "The service was not created.",
		},
		Pending: "The service is NOT confirmed yet; its result is unknown.",
	},
}))

// createServiceOp is the logic of CreateService.
type createServiceOp struct{}

func (createServiceOp) Normalize(in *ServiceInput) error {
	if err := op.First(op.Text("name", &in.Name, maxName, true), op.Int("duration_minutes", &in.DurationMinutes, 5, 24*60)); err != nil {
		return err
	}
	if in.BufferMinutes != "" {
		if err := op.Int("buffer_minutes", &in.BufferMinutes, 0, MaxBufferMinutes); err != nil {
			return err
		}
		if in.BufferMinutes == "0" {
			in.BufferMinutes = "" // the default, said or not: one input
		}
	}
	switch {
	case in.PriceAmount == "" && strings.TrimSpace(in.Currency) != "":
		return fault.Field("currency", "is given without price_amount: give both or neither")
	case in.PriceAmount == "":
		in.Currency = ""
		return nil
	}
	return op.First(op.Int("price_amount", &in.PriceAmount, 0, op.MaxAmount), op.Currency("currency", &in.Currency))
}

func (createServiceOp) Execute(ctx context.Context, tx *db.Tx, x idem.Exec, in ServiceInput) (idem.Result, error) {
	n := oncecall.NewService{TenantID: x.TenantID, Name: in.Name, DurationMinutes: int(in.DurationMinutes.Int64())}
	if in.BufferMinutes != "" {
		n.BufferMinutes = int(in.BufferMinutes.Int64())
	}
	if in.PriceAmount != "" {
		n.HasPrice, n.PriceAmount, n.Currency = true, in.PriceAmount.Int64(), in.Currency
	}
	s, taken, err := tx.CreateService(ctx, n)
	if err != nil {
		return idem.Result{}, err
	}
	if taken {
		existing, err := tx.ServiceByName(ctx, x.TenantID, in.Name)
		if err != nil {
			return idem.Result{}, err
		}
		return op.Reject(ServiceExists, map[string]string{"service_id": existing.ID.String()})
	}
	return op.Confirm(http.StatusCreated, s.ID.String(), ServiceViewOf(s))
}

// PractitionerInput is the input of practitioner.create.
type PractitionerInput struct {
	Name        string   `json:"name" required:"true" minLength:"1" maxLength:"200" desc:"The practitioner's name as callers know them, unique in the business in any case, e.g. Dr. Ortiz."`
	LocationIDs []string `json:"location_ids" required:"true" desc:"The ids of the locations they work at, 1 to 100."`
	ServiceIDs  []string `json:"service_ids" desc:"Optional: the ids of the services they perform, at most 100."`
}

// CreatePractitioner adds a practitioner working at some locations and
// performing some services. It is not offered to voice agents.
var CreatePractitioner = family.Add(op.Define(op.Spec[PractitionerInput]{
	Name:    "practitioner.create",
	Label:   "New practitioner",
	Version: 1,
	Logic:   createPractitionerOp{},
	Say: op.Phrases{
		Confirmed: "The practitioner is created.",
		Rejected: map[string]string{
			PractitionerExists: "The business already has a practitioner of that name; nothing was created.",
			LocationNotFound:   "A location named by id does not exist; nothing was created.",
			ServiceNotFound:    "A service named by id does not exist; nothing was created.",
			"":                 "The practitioner was not created.",
		},
		Pending: "The practitioner is NOT confirmed yet; its result is unknown.",
	},
}))

// createPractitionerOp is the logic of CreatePractitioner.
type createPractitionerOp struct{}

func (createPractitionerOp) Normalize(in *PractitionerInput) error {
	if err := op.Text("name", &in.Name, maxName, true); err != nil {
		return err
	}
	if len(in.LocationIDs) == 0 {
		return fault.Field("location_ids", "is required: give the id of at least one location they work at")
	}
	var err error
	if in.LocationIDs, err = idList("location_ids", in.LocationIDs); err != nil {
		return err
	}
	in.ServiceIDs, err = idList("service_ids", in.ServiceIDs)
	return err
}

func (createPractitionerOp) Execute(ctx context.Context, tx *db.Tx, x idem.Exec, in PractitionerInput) (idem.Result, error) {
	locations, services := uuids(in.LocationIDs), uuids(in.ServiceIDs)
	missingL, missingS, err := tx.MissingCatalogIDs(ctx, x.TenantID, locations, services)
	switch {
	case err != nil:
		return idem.Result{}, err
	case len(missingL) > 0:
		return op.Reject(LocationNotFound, map[string][]string{"location_ids": strs(missingL)})
	case len(missingS) > 0:
		return op.Reject(ServiceNotFound, map[string][]string{"service_ids": strs(missingS)})
	}
	p, taken, err := tx.CreatePractitioner(ctx, oncecall.NewPractitioner{TenantID: x.TenantID, Name: in.Name, LocationIDs: locations, ServiceIDs: services})
	if err != nil {
		return idem.Result{}, err
	}
	if taken {
		existing, err := tx.PractitionerByName(ctx, x.TenantID, in.Name)
		if err != nil {
			return idem.Result{}, err
		}
		return op.Reject(PractitionerExists, map[string]string{"practitioner_id": existing.ID.String()})
	}
	return op.Confirm(http.StatusCreated, p.ID.String(), PractitionerViewOf(p))
}

// idList checks a list of ids: each a uuid, at most MaxLinks; it returns
// them lower-case, without repeats, sorted (the same set is one input),
// never nil.
func idList(field string, ids []string) ([]string, error) {
	if len(ids) > MaxLinks {
		return nil, fault.Field(field, "must have at most %d ids", MaxLinks)
	}
	out := make([]string, 0, len(ids))
	for i, id := range ids {
		if err := op.ID(fmt.Sprintf("%s[%d]", field, i), &id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func uuids(ids []string) []uuid.UUID {
	out := make([]uuid.UUID, len(ids))
	for i, id := range ids {
		out[i] = op.MustUUID(id)
	}
	return out
}

func strs(ids []uuid.UUID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}
