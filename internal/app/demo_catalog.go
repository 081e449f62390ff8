package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/schedule"
)

// The demo tenant's clinic: one location, two services and two
// practitioners, with afternoons free for the next two weeks, so that "a
// cleaning with Dr. Ortiz tomorrow afternoon" has an answer.
const (
	demoLocation   = "Downtown"
	demoAddress    = "1 Main Street"
	demoDays       = 14
	demoFirstHour  = 13
	demoLastHour   = 17
	demoSlotLength = time.Hour
)

// demoService is a service of the demo clinic.
type demoService struct {
	name    string
	minutes int
	price   int64 // minor units of USD; 0: no set price
}

var demoServices = []demoService{
	{name: "Cleaning", minutes: 30, price: 8000},
	{name: "Check-up", minutes: 45},
}

// demoPractitioners are the practitioners and the services they perform.
var demoPractitioners = []struct {
	name     string
	services []string
}{
	{"Dr. Ortiz", []string{"Cleaning", "Check-up"}},
	{"Dr. Lee", []string{"Cleaning"}},
}

// seedDemoCatalog makes sure the demo tenant has its clinic: the records
// missing are created, and each practitioner's afternoons from tomorrow on
// (times they have a slot at already are skipped, so a restart adds only
// the days that came into range).
func seedDemoCatalog(ctx context.Context, s *db.Store, t oncecall.Tenant) error {
	zone, err := s.TenantTimezone(ctx, t.ID)
	if err != nil {
		return fmt.Errorf("demo location: %w", err)
	}
	place, err := s.LocationByName(ctx, t.ID, demoLocation)
	if errors.Is(err, db.ErrNotFound) {
		place, _, err = s.CreateLocation(ctx, oncecall.NewLocation{TenantID: t.ID, Name: demoLocation, Timezone: zone, Address: demoAddress})
	}
	if err != nil {
		return fmt.Errorf("demo location: %w", err)
	}
	services := map[string]uuid.UUID{}
	for _, d := range demoServices {
		sv, err := s.ServiceByName(ctx, t.ID, d.name)
		if errors.Is(err, db.ErrNotFound) {
			n := oncecall.NewService{TenantID: t.ID, Name: d.name, DurationMinutes: d.minutes}
			if d.price > 0 {
				n.HasPrice, n.PriceAmount, n.Currency = true, d.price, "USD"
			}
			sv, _, err = s.CreateService(ctx, n)
		}
		if err != nil {
			return fmt.Errorf("demo service: %w", err)
		}
		services[d.name] = sv.ID
	}
	loc, err := schedule.ParseZone(place.Timezone)
	if err != nil {
		loc = time.UTC
	}
	tomorrow := time.Now().In(loc).AddDate(0, 0, 1)
	plan := schedule.Plan{Slot: demoSlotLength, First: tomorrow, Last: tomorrow.AddDate(0, 0, demoDays-1)}
	for d := range 7 {
		plan.Hours = append(plan.Hours, schedule.Hours{Weekday: time.Weekday(d), Start: demoFirstHour * 60, End: demoLastHour * 60})
	}
	var times []db.SlotTime
	for _, sp := range plan.Slots(loc) {
		times = append(times, db.SlotTime{StartsAt: sp.Start, EndsAt: sp.End})
	}
	for _, d := range demoPractitioners {
		// The practitioner, their links and their slots in one transaction.
		err := s.InTx(ctx, func(tx *db.Tx) error {
			p, err := tx.PractitionerByName(ctx, t.ID, d.name)
			if errors.Is(err, db.ErrNotFound) {
				n := oncecall.NewPractitioner{TenantID: t.ID, Name: d.name, LocationIDs: []uuid.UUID{place.ID}}
				for _, name := range d.services {
					n.ServiceIDs = append(n.ServiceIDs, services[name])
				}
				p, _, err = tx.CreatePractitioner(ctx, n)
			}
			if err != nil {
				return err
			}
			if err := tx.LockPractitionerSlots(ctx, t.ID, p.ID); err != nil {
				return err
			}
			_, err = tx.InsertPractitionerSlots(ctx, db.PractitionerSlots{TenantID: t.ID, PractitionerID: p.ID, LocationID: place.ID, Resource: p.Name}, times)
			return err
		})
		if err != nil {
			return fmt.Errorf("demo practitioner: %w", err)
		}
	}
	return nil
}
