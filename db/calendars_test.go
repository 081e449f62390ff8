package db_test

import (
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// A connection keeps its id while its provider stays the same (steps
// planned for it are still driven after new credentials), gets a new one
// with another provider, and its mappings are replaced as a whole; a
// mapping to another tenant's practitioner is refused and changes nothing.
func TestCalendarConnectionKeepsItsIDAndMappingsStayTheTenants(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := db.New(pgtest.NewPool(t))
	clinic, _, err := store.CreateTenant(ctx, "clinic", "")
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := store.CreateTenant(ctx, "other", "")
	if err != nil {
		t.Fatal(err)
	}
	ana, _, err := store.CreatePractitioner(ctx, oncecall.NewPractitioner{TenantID: clinic.ID, Name: "Ana"})
	if err != nil {
		t.Fatal(err)
	}
	stranger, _, err := store.CreatePractitioner(ctx, oncecall.NewPractitioner{TenantID: other.ID, Name: "Stranger"})
	if err != nil {
		t.Fatal(err)
	}
	conn := oncecall.CalendarConnection{TenantID: clinic.ID, Provider: oncecall.CalendarGoogle, Credentials: "env:GOOGLE_KEY",
		Settings: map[string]string{"subject": "admin@clinic.example"}}
	first, err := store.ConnectCalendar(ctx, conn, []oncecall.CalendarMapping{
		{CalendarID: "clinic@example"}, {PractitionerID: ana.ID, CalendarID: "ana@example"},
	})
	if err != nil {
		t.Fatal(err)
	}
	conn.Credentials = "file:/etc/oncecall/google.json"
	again, err := store.ConnectCalendar(ctx, conn, []oncecall.CalendarMapping{{PractitionerID: ana.ID, CalendarID: "ana2@example"}})
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != first.ID || again.Credentials != conn.Credentials || again.Settings["subject"] != "admin@clinic.example" {
		t.Fatalf("reconnected with the same provider: %+v, want id %s kept and the new credentials", again, first.ID)
	}
	maps, err := store.CalendarMappings(ctx, clinic.ID)
	if err != nil || len(maps) != 1 || maps[0].CalendarID != "ana2@example" || maps[0].Practitioner != "Ana" {
		t.Fatalf("mappings after reconnecting: %+v, %v; want only Ana's new calendar", maps, err)
	}

	_, err = store.ConnectCalendar(ctx, conn, []oncecall.CalendarMapping{{PractitionerID: stranger.ID, CalendarID: "x@example"}})
	if !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("a mapping to another tenant's practitioner: %v, want ErrNotFound", err)
	}
	if maps, _ := store.CalendarMappings(ctx, clinic.ID); len(maps) != 1 || maps[0].CalendarID != "ana2@example" {
		t.Fatalf("the refused connect changed the mappings: %+v", maps)
	}

	conn.Provider, conn.Credentials = oncecall.CalendarCalcom, "env:CALCOM_KEY"
	moved, err := store.ConnectCalendar(ctx, conn, []oncecall.CalendarMapping{{PractitionerID: ana.ID, CalendarID: "42"}})
	if err != nil || moved.ID == first.ID || moved.ID == uuid.Nil {
		t.Fatalf("connected to another provider: %+v, %v; want a new id", moved, err)
	}
	byID, err := store.CalendarConnectionByID(ctx, moved.ID)
	if err != nil || byID.TenantID != clinic.ID || byID.Provider != oncecall.CalendarCalcom {
		t.Fatalf("the connection by its id: %+v, %v", byID, err)
	}
	if err := store.DisconnectCalendar(ctx, clinic.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := store.CalendarConnection(ctx, clinic.ID); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("after disconnecting: %v, want ErrNotFound", err)
	}
}
