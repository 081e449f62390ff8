package api

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/catalog"
	"github.com/oncecall/oncecall/internal/dashatool"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/op"
)

// The catalog's reads: locations, practitioners and services, over REST
// and as the read-only tools list_services and list_practitioners. An id
// of another tenant's record lists nothing.

// listLocations answers GET /v1/locations: the tenant's locations by name.
func (s *Server) listLocations(w http.ResponseWriter, r *http.Request) {
	if _, err := queryParams(r); err != nil {
		writeError(w, r, err)
		return
	}
	list, err := s.cfg.Store.ListLocations(r.Context(), tenantFrom(r.Context()).ID)
	if err != nil {
		writeError(w, r, db.Fault(err))
		return
	}
	out := make([]catalog.LocationView, len(list))
	for i, l := range list {
		out[i] = catalog.LocationViewOf(l)
	}
	writeJSON(w, http.StatusOK, map[string]any{"locations": out})
}

// listServices answers GET /v1/services?practitioner_id=&location_id=.
func (s *Server) listServices(w http.ResponseWriter, r *http.Request) {
	f, err := catalogFilter(r, "practitioner_id", "location_id")
	if err != nil {
		writeError(w, r, err)
		return
	}
	list, err := s.cfg.Store.ListServices(r.Context(), tenantFrom(r.Context()).ID, f)
	if err != nil {
		writeError(w, r, db.Fault(err))
		return
	}
	out := make([]catalog.ServiceView, len(list))
	for i, sv := range list {
		out[i] = catalog.ServiceViewOf(sv)
	}
	writeJSON(w, http.StatusOK, map[string]any{"services": out})
}

// listPractitioners answers GET /v1/practitioners?location_id=&service_id=.
func (s *Server) listPractitioners(w http.ResponseWriter, r *http.Request) {
	f, err := catalogFilter(r, "location_id", "service_id")
	if err != nil {
		writeError(w, r, err)
		return
	}
	list, err := s.cfg.Store.ListPractitioners(r.Context(), tenantFrom(r.Context()).ID, f)
	if err != nil {
		writeError(w, r, db.Fault(err))
		return
	}
	out := make([]catalog.PractitionerView, len(list))
	for i, p := range list {
		out[i] = catalog.PractitionerViewOf(p)
	}
	writeJSON(w, http.StatusOK, map[string]any{"practitioners": out})
}

// catalogFilter reads the id parameters of a catalog listing.
func catalogFilter(r *http.Request, allowed ...string) (db.CatalogFilter, error) {
	q, err := queryParams(r, allowed...)
	if err != nil {
		return db.CatalogFilter{}, err
	}
	var f db.CatalogFilter
	for name, v := range q {
		id, err := uuid.Parse(v)
		if err != nil || len(v) != 36 {
			return db.CatalogFilter{}, fault.Field(name, "must be an id (UUID) returned by this API")
		}
		switch name {
		case "practitioner_id":
			f.PractitionerID = id
		case "location_id":
			f.LocationID = id
		case "service_id":
			f.ServiceID = id
		}
	}
	return f, nil
}

func (s *Server) listServicesTool(ctx context.Context, tenant oncecall.Tenant, raw json.RawMessage) (dashatool.Answer, error) {
	var in dashatool.ServicesInput
	if ans, ok, err := toolInput(raw, &in); !ok {
		return ans, err
	}
	list, err := s.cfg.Store.ListServices(ctx, tenant.ID, db.CatalogFilter{PractitionerID: op.OptionalUUID(in.PractitionerID), LocationID: op.OptionalUUID(in.LocationID)})
	if err != nil {
		return dashatool.Answer{}, db.Fault(err)
	}
	more := len(list) > dashatool.MaxCatalog
	if more {
		list = list[:dashatool.MaxCatalog]
	}
	return dashatool.ServicesAnswer(list, more), nil
}

func (s *Server) listPractitionersTool(ctx context.Context, tenant oncecall.Tenant, raw json.RawMessage) (dashatool.Answer, error) {
	var in dashatool.PractitionersInput
	if ans, ok, err := toolInput(raw, &in); !ok {
		return ans, err
	}
	list, err := s.cfg.Store.ListPractitioners(ctx, tenant.ID, db.CatalogFilter{ServiceID: op.OptionalUUID(in.ServiceID), LocationID: op.OptionalUUID(in.LocationID)})
	if err != nil {
		return dashatool.Answer{}, db.Fault(err)
	}
	more := len(list) > dashatool.MaxCatalog
	if more {
		list = list[:dashatool.MaxCatalog]
	}
	places, err := s.cfg.Store.ListLocations(ctx, tenant.ID)
	if err != nil {
		return dashatool.Answer{}, db.Fault(err)
	}
	services, err := s.cfg.Store.ListServices(ctx, tenant.ID, db.CatalogFilter{})
	if err != nil {
		return dashatool.Answer{}, db.Fault(err)
	}
	out := make([]dashatool.PractitionerItem, len(list))
	for i, p := range list {
		item := dashatool.PractitionerItem{PractitionerID: p.ID.String(), Name: p.Name, Locations: []dashatool.NamedPlace{}, Services: []dashatool.NamedRecord{}}
		// Names in the order the listings sort them: by name.
		for _, l := range places {
			if slices.Contains(p.LocationIDs, l.ID) {
				item.Locations = append(item.Locations, dashatool.NamedPlace{LocationID: l.ID.String(), Name: l.Name, Address: l.Address, Timezone: l.Timezone})
			}
		}
		for _, sv := range services {
			if slices.Contains(p.ServiceIDs, sv.ID) {
				item.Services = append(item.Services, dashatool.NamedRecord{ServiceID: sv.ID.String(), Name: sv.Name})
			}
		}
		out[i] = item
	}
	return dashatool.PractitionersAnswer(out, more), nil
}

// parseOptional is the id of an optional argument Normalize checked;
// uuid.Nil when absent.
