// Package calendartest builds calendar steps for the adapters' tests: a
// version 2 payload and the provider.Write the step driver would send.
package calendartest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/calendar"
)

// Zone is the location's zone in the tests.
var Zone = mustZone("Europe/Madrid")

func mustZone(name string) *time.Location {
	z, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return z
}

// Step is one step as the driver holds it.
type Step struct {
	Action, Tenant, Customer uuid.UUID
	Name                     string
}

// NewStep is a step of a new action.
func NewStep(name string) Step {
	return Step{Action: uuid.New(), Tenant: uuid.New(), Customer: uuid.New(), Name: name}
}

// Key is the step's provider key, derived as oncecall derives it: "oc-"
// and 40 hex digits of a hash of the action and the step.
func (s Step) Key() string {
	sum := sha256.Sum256([]byte(s.Action.String() + "/" + s.Name))
	return "oc-" + hex.EncodeToString(sum[:20])
}

// Ref is the step's external reference.
func (s Step) Ref() string { return s.Action.String() + "/" + s.Name }

// Payload is a version 2 payload for the step at start, lasting minutes,
// on the practitioner's calendar.
func (s Step) Payload(calendarID string, start time.Time, minutes int) calendar.Payload {
	return calendar.Payload{
		Version: calendar.PayloadVersion, TenantID: s.Tenant.String(), ActionID: s.Action.String(), StepKey: s.Key(),
		Start: calendar.At(start, Zone), End: calendar.At(start.Add(time.Duration(minutes)*time.Minute), Zone),
		Practitioner: calendar.Practitioner{ID: uuid.NewString(), Name: "Dr. Ana Ruiz", CalendarID: calendarID},
		Location:     &calendar.Location{ID: uuid.NewString(), Name: "Centro", Address: "Calle Mayor 1"},
		Service:      calendar.Service{ID: uuid.NewString(), Name: "Cleaning"},
		Customer:     calendar.Contact{ID: s.Customer.String(), Name: "Lucía Pérez", Phone: "+34600000001", Email: "lucia@example.com"},
	}
}

// Write is the provider.Write of the step with payload p.
func (s Step) Write(t testing.TB, operation string, p calendar.Payload) provider.Write {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return provider.Write{Capability: provider.Calendar, Key: s.Key(), ExternalRef: s.Ref(), Operation: operation, Payload: raw}
}

// Day is a day far enough ahead to be free in every fake, at hour:minute UTC.
func Day(hour, minute int) time.Time {
	d := time.Now().UTC().AddDate(0, 0, 30)
	return time.Date(d.Year(), d.Month(), d.Day(), hour, minute, 0, 0, time.UTC)
}
