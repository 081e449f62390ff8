package app_test

import (
	"io"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// TestDemoHasAClinic: the demo tenant has one location, two services, two
// practitioners and both practitioners' afternoons from tomorrow on; a
// restart adds nothing twice.
func TestDemoHasAClinic(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	for range 2 {
		if err := e.Main.SeedDemo(t.Context(), io.Discard, "bin/oncecall"); err != nil {
			t.Fatal(err)
		}
	}
	for query, want := range map[string]int{
		"SELECT count(*) FROM locations": 1,
		"SELECT count(*) FROM services WHERE name = 'Cleaning' AND duration_minutes = 30 AND price_amount = 8000 AND currency = 'usd'": 1,
		"SELECT count(*) FROM services WHERE name = 'Check-up' AND duration_minutes = 45 AND price_amount IS NULL":                     1,
		"SELECT count(*) FROM practitioners": 2,
		`SELECT count(*) FROM practitioner_services ps JOIN practitioners p ON p.id = ps.practitioner_id WHERE p.name = 'Dr. Ortiz'`: 2,
		`SELECT count(*) FROM practitioner_services ps JOIN practitioners p ON p.id = ps.practitioner_id WHERE p.name = 'Dr. Lee'`:   1,
		// 14 days of 13:00-17:00 in hour slots, each.
		"SELECT count(*) FROM slots WHERE practitioner_id IS NOT NULL": 2 * 14 * 4,
		`SELECT count(*) FROM slots a JOIN slots b ON a.practitioner_id = b.practitioner_id AND a.id < b.id
			AND a.starts_at < b.ends_at AND b.starts_at < a.ends_at`: 0,
	} {
		if got := e.Count(query); got != want {
			t.Errorf("%s = %d, want %d", query, got, want)
		}
	}
	// Tomorrow afternoon (the demo tenant's zone is UTC) is free with each.
	tomorrow := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
	if n := e.Count(`SELECT count(DISTINCT s.practitioner_id) FROM slots s WHERE s.starts_at >= $1 AND s.starts_at < $2
		AND NOT EXISTS (SELECT 1 FROM appointments a WHERE a.slot_id = s.id AND a.status = 'active')`,
		tomorrow.Add(13*time.Hour), tomorrow.Add(17*time.Hour)); n != 2 {
		t.Errorf("practitioners free tomorrow afternoon = %d, want 2", n)
	}
}
