package dashatool

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/internal/op"
)

// The read-only tools of a business with more than one calendar: what it
// offers and who offers it, with short answers an agent can say.
const (
	ListServices      = "list_services"
	ListPractitioners = "list_practitioners"
)

// MaxCatalog is the most services or practitioners one answer lists.
const MaxCatalog = 20

// ServicesInput is the arguments of list_services.
type ServicesInput struct {
	PractitionerID string `json:"practitioner_id" format:"uuid" desc:"Optional: only the services this practitioner (from list_practitioners) performs."`
	LocationID     string `json:"location_id" format:"uuid" desc:"Optional: only the services performed at this location."`
}

// Normalize validates the input.
func (in *ServicesInput) Normalize() error {
	return op.First(op.OptionalID("practitioner_id", &in.PractitionerID), op.OptionalID("location_id", &in.LocationID))
}

// PractitionersInput is the arguments of list_practitioners.
type PractitionersInput struct {
	ServiceID  string `json:"service_id" format:"uuid" desc:"Optional: only the practitioners who perform this service (from list_services)."`
	LocationID string `json:"location_id" format:"uuid" desc:"Optional: only the practitioners who work at this location."`
}

// Normalize validates the input.
func (in *PractitionersInput) Normalize() error {
	return op.First(op.OptionalID("service_id", &in.ServiceID), op.OptionalID("location_id", &in.LocationID))
}

// ServiceItem is what a voice agent learns of a service.
type ServiceItem struct {
	ServiceID       string `json:"service_id"`
	Name            string `json:"name"`
	DurationMinutes int    `json:"duration_minutes"`
	// Price says the price as a person does ("80 US dollars"); empty when
	// the service has no set price.
	Price string `json:"price,omitempty"`
}

// ServicesAnswer answers list_services; more is true when the tenant has
// more services than were listed.
func ServicesAnswer(services []oncecall.Service, more bool) Answer {
	items := make([]ServiceItem, len(services))
	parts := make([]string, len(services))
	for i, s := range services {
		items[i] = ServiceItem{ServiceID: s.ID.String(), Name: s.Name, DurationMinutes: s.DurationMinutes}
		parts[i] = fmt.Sprintf("%s, %s", s.Name, minutes(s.DurationMinutes))
		if s.HasPrice {
			items[i].Price = Price(s.PriceAmount, s.Currency)
			parts[i] += ", " + items[i].Price
		}
	}
	summary := "No service is offered."
	if len(parts) > 0 {
		summary = "We offer " + serial(parts) + "."
	}
	details, _ := json.Marshal(map[string]any{"services": items, "summary": summary, "has_more": more})
	say := "There is no such service. Do not offer one; ask the caller what they need or offer to take a message."
	if len(items) > 0 {
		say = "These are the services. You may read summary to the caller. To find a time for one, call " +
			"find_available_slots with its service_id. Never invent a service or a price."
	}
	return Answer{Outcome: string(oncecall.Confirmed), Say: say, Details: details}
}

// PractitionerItem is what a voice agent learns of a practitioner.
type PractitionerItem struct {
	PractitionerID string        `json:"practitioner_id"`
	Name           string        `json:"name"`
	Locations      []NamedPlace  `json:"locations"`
	Services       []NamedRecord `json:"services"`
}

// NamedPlace is a location in a practitioner's answer.
type NamedPlace struct {
	LocationID string `json:"location_id"`
	Name       string `json:"name"`
	Address    string `json:"address,omitempty"`
	Timezone   string `json:"timezone"`
}

// NamedRecord is a service in a practitioner's answer.
type NamedRecord struct {
	ServiceID string `json:"service_id"`
	Name      string `json:"name"`
}

// PractitionersAnswer answers list_practitioners; more is true when more
// practitioners match than were listed.
func PractitionersAnswer(found []PractitionerItem, more bool) Answer {
	if found == nil {
		found = []PractitionerItem{}
	}
	parts := make([]string, len(found))
	for i, p := range found {
		var services, places []string
		for _, s := range p.Services {
			services = append(services, s.Name)
		}
		for _, l := range p.Locations {
			places = append(places, l.Name)
		}
		parts[i] = p.Name
		if len(services) > 0 {
			parts[i] += ": " + list(services)
		}
		if len(places) > 0 {
			parts[i] += ", at " + list(places)
		}
		parts[i] += "."
	}
	summary := strings.Join(parts, " ")
	if summary == "" {
		summary = "Nobody matches."
	}
	details, _ := json.Marshal(map[string]any{"practitioners": found, "summary": summary, "has_more": more})
	say := "Nobody matches. Do not name a practitioner; ask the caller whether anyone else, or another location, would suit them."
	if len(found) > 0 {
		say = "These are the practitioners with their services and locations. You may read summary to the caller. To find a " +
			"time with one, call find_available_slots with their practitioner_id. Never invent a practitioner."
	}
	return Answer{Outcome: string(oncecall.Confirmed), Say: say, Details: details}
}

// Price says an amount as a person does, without a fraction of zeros:
// "80 US dollars", "12.50 euros".
func Price(minor int64, currency string) string {
	s := op.SpokenAmount(minor, currency)
	num, unit, _ := strings.Cut(s, " ")
	if whole, frac, ok := strings.Cut(num, "."); ok && strings.Trim(frac, "0") == "" {
		return whole + " " + unit
	}
	return s
}

func minutes(n int) string {
	switch {
	case n == 60:
		return "1 hour"
	case n%60 == 0:
		return fmt.Sprintf("%d hours", n/60)
	}
	return fmt.Sprintf("%d minutes", n)
}

// serial joins items that have commas of their own: "a, and b", "a, b, and c".
func serial(items []string) string {
	if len(items) < 2 {
		return list(items)
	}
	return strings.Join(items[:len(items)-1], ", ") + ", and " + items[len(items)-1]
}

// list joins items as said: "a", "a and b", "a, b, and c".
func list(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	case 2:
		return items[0] + " and " + items[1]
	}
	return strings.Join(items[:len(items)-1], ", ") + ", and " + items[len(items)-1]
}
