package catalog

import (
	"time"

	"github.com/oncecall/oncecall"
)

// LocationView is the wire shape of a location.
type LocationView struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Timezone  string    `json:"timezone"`
	Address   string    `json:"address"`
	CreatedAt time.Time `json:"created_at"`
}

// LocationViewOf is the view of a location.
func LocationViewOf(l oncecall.Location) LocationView {
	return LocationView{ID: l.ID.String(), Name: l.Name, Timezone: l.Timezone, Address: l.Address, CreatedAt: l.CreatedAt}
}

// ServiceView is the wire shape of a service; the price fields are null
// when it has no set price.
type ServiceView struct {
	ID              string    `json:"id"`
	Name            string    `json:"name"`
	DurationMinutes int       `json:"duration_minutes"`
	BufferMinutes   int       `json:"buffer_minutes"`
	PriceAmount     *int64    `json:"price_amount"`
	Currency        *string   `json:"currency"`
	CreatedAt       time.Time `json:"created_at"`
}

// ServiceViewOf is the view of a service.
func ServiceViewOf(s oncecall.Service) ServiceView {
	v := ServiceView{ID: s.ID.String(), Name: s.Name, DurationMinutes: s.DurationMinutes, BufferMinutes: s.BufferMinutes, CreatedAt: s.CreatedAt}
	if s.HasPrice {
		amount, currency := s.PriceAmount, s.Currency
		v.PriceAmount, v.Currency = &amount, &currency
	}
	return v
}

// PractitionerView is the wire shape of a practitioner: the ids of the
// locations they work at and the services they perform.
type PractitionerView struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	LocationIDs []string  `json:"location_ids"`
	ServiceIDs  []string  `json:"service_ids"`
	CreatedAt   time.Time `json:"created_at"`
}

// PractitionerViewOf is the view of a practitioner.
func PractitionerViewOf(p oncecall.Practitioner) PractitionerView {
	return PractitionerView{ID: p.ID.String(), Name: p.Name, LocationIDs: strs(p.LocationIDs), ServiceIDs: strs(p.ServiceIDs), CreatedAt: p.CreatedAt}
}
