package api

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/dashatool"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/schedule"
)

// The read-only tools that serve a returning caller. Like
// check_action_status they claim nothing and see only the tenant's records.

// findCustomer looks a customer up by the phone argument or, without one,
// by the number the call comes from (Dasha's endpoint, another platform's
// caller number).
func (s *Server) findCustomer(ctx context.Context, tenant oncecall.Tenant, c voiceCall) (dashatool.Answer, error) {
	var in dashatool.FindCustomerInput
	if ans, ok, err := toolInput(c.Arguments, &in); !ok {
		return ans, err
	}
	phone, source := in.Phone, dashatool.FromArgument
	if phone == "" {
		var ok bool
		if phone, ok = c.callerNumber(); !ok {
			return dashatool.NoCallerNumber(), nil
		}
		source = dashatool.FromCall
	}
	cust, err := s.cfg.Store.CustomerByPhone(ctx, tenant.ID, phone)
	if errors.Is(err, db.ErrNotFound) {
		return dashatool.CustomersFound(nil, source), nil
	}
	if err != nil {
		return dashatool.Answer{}, db.Fault(err)
	}
	return dashatool.CustomersFound([]dashatool.CustomerView{dashatool.ViewOf(cust)}, source), nil
}

func (s *Server) getCustomerTool(ctx context.Context, tenant oncecall.Tenant, raw json.RawMessage) (dashatool.Answer, error) {
	var in dashatool.CustomerInput
	if ans, ok, err := toolInput(raw, &in); !ok {
		return ans, err
	}
	c, err := s.cfg.Store.CustomerByID(ctx, tenant.ID, uuid.MustParse(in.CustomerID))
	if errors.Is(err, db.ErrNotFound) {
		return dashatool.CustomerMissing(in.CustomerID), nil
	}
	if err != nil {
		return dashatool.Answer{}, db.Fault(err)
	}
	return dashatool.CustomerAnswer(dashatool.ViewOf(c)), nil
}

func (s *Server) listAppointmentsTool(ctx context.Context, tenant oncecall.Tenant, raw json.RawMessage) (dashatool.Answer, error) {
	var in dashatool.AppointmentsInput
	if ans, ok, err := toolInput(raw, &in); !ok {
		return ans, err
	}
	customer, missing, err := s.toolCustomer(ctx, tenant, in.CustomerID)
	if err != nil || missing.Outcome != "" {
		return missing, err
	}
	clock, err := s.tenantClock(ctx, tenant.ID)
	if err != nil {
		return dashatool.Answer{}, err
	}
	now := time.Now()
	list, err := s.customerAppointments(ctx, tenant.ID, customer, now, in.N())
	if err != nil {
		return dashatool.Answer{}, db.Fault(err)
	}
	details, err := json.Marshal(map[string]any{
		"customer_id": in.CustomerID, "timezone": clock.Zone, "appointments": localAppointments(list, clock, now),
	})
	if err != nil {
		return dashatool.Answer{}, err
	}
	return dashatool.AppointmentsAnswer(len(list), details), nil
}

// slotQuery is what find_available_slots and GET /v1/slots look for:
// today and tomorrow are read in the named location's timezone, else in
// loc, the tenant's. A location the tenant does not have is a bad field.
func (s *Server) slotQuery(ctx context.Context, tenant uuid.UUID, in dashatool.SlotsInput, zone string, loc *time.Location) (oncecall.OpenSlotQuery, error) {
	dayLoc := loc
	if in.LocationID != "" {
		name, err := s.cfg.Store.LocationZone(ctx, tenant, uuid.MustParse(in.LocationID))
		if errors.Is(err, db.ErrNotFound) {
			return oncecall.OpenSlotQuery{}, fault.Field("location_id", "no location of this business has that id")
		}
		if err != nil {
			return oncecall.OpenSlotQuery{}, db.Fault(err)
		}
		if l, err := schedule.ParseZone(name); err == nil {
			dayLoc = l
		}
	}
	return in.Query(time.Now(), dayLoc, zone), nil
}

// toolCustomer is the customer a read tool names (its id already checked by
// the tool's input); when none is on file, missing is the answer saying so.
func (s *Server) toolCustomer(ctx context.Context, tenant oncecall.Tenant, id string) (customer uuid.UUID, missing dashatool.Answer, err error) {
	customer = uuid.MustParse(id)
	exists, err := s.cfg.Store.CustomerExists(ctx, tenant.ID, customer)
	if err != nil {
		return uuid.Nil, dashatool.Answer{}, db.Fault(err)
	}
	if !exists {
		return uuid.Nil, dashatool.CustomerMissing(id), nil
	}
	return customer, dashatool.Answer{}, nil
}
