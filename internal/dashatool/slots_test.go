package dashatool_test

import (
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/dashatool"
)

// TestSlotsQueryReadsDaysInTheGivenZone: today and tomorrow are the days
// of loc at that moment, a day is kept for each slot's own zone, and a
// part of the day bounds the local minute.
func TestSlotsQueryReadsDaysInTheGivenZone(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	// 02:00 UTC on 3 December is still 2 December in New York.
	now := time.Date(2030, 12, 3, 2, 0, 0, 0, time.UTC)
	q := func(in dashatool.SlotsInput) (string, string, int, int) {
		t.Helper()
		if err := in.Normalize(); err != nil {
			t.Fatal(err)
		}
		x := in.Query(now, ny, "Europe/London")
		if x.TenantZone != "Europe/London" || !x.OnlyAvailable || x.From.Before(now) {
			t.Fatalf("query %+v", x)
		}
		return x.FromDate, x.ToDate, x.MinMinute, x.MaxMinute
	}
	if from, to, _, _ := q(dashatool.SlotsInput{Date: "today"}); from != "2030-12-02" || to != "2030-12-02" {
		t.Errorf("today in New York: %s..%s", from, to)
	}
	if from, to, lo, hi := q(dashatool.SlotsInput{Date: " Tomorrow ", PartOfDay: "afternoon"}); from != "2030-12-03" || to != "2030-12-03" || lo != 720 || hi != 1020 {
		t.Errorf("tomorrow afternoon in New York: %s..%s %d-%d", from, to, lo, hi)
	}
	if _, _, lo, hi := q(dashatool.SlotsInput{PartOfDay: "morning"}); lo != -1 || hi != 720 {
		t.Errorf("morning: %d-%d", lo, hi)
	}
	if _, _, lo, hi := q(dashatool.SlotsInput{PartOfDay: "evening"}); lo != 1020 || hi != -1 {
		t.Errorf("evening: %d-%d", lo, hi)
	}
	from := "2030-12-10"
	if f, to, _, _ := q(dashatool.SlotsInput{From: &from, To: "2030-12-12"}); f != from || to != "2030-12-12" {
		t.Errorf("from and to as days: %s..%s", f, to)
	}
	for _, bad := range []dashatool.SlotsInput{
		{Date: "2030-02-30"}, {Date: "today", To: "2030-12-12"}, {PartOfDay: "noon"}, {After: "x"}, {To: "later"},
	} {
		if bad.Normalize() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
