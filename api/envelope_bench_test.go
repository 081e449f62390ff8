package api

import (
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/oncecall/oncecall"
)

// BenchmarkWriteAction is the answer of a completed booking, first or
// replayed.
func BenchmarkWriteAction(b *testing.B) {
	a := oncecall.Action{
		ID: uuid.MustParse("0197a3b0-0000-7000-8000-00000000000a"), Operation: "appointment.book",
		State: oncecall.Completed, Outcome: oncecall.Confirmed, Status: 201, ResourceID: "0197a3b0-0000-7000-8000-000000000000",
		Result: []byte(`{"id":"0197a3b0-0000-7000-8000-000000000000","customer_id":"0197a3b0-0000-7000-8000-000000000001",` +
			`"slot_id":"0197a3b0-0000-7000-8000-000000000002","service":"","status":"active",` +
			`"starts_at":"2030-01-02T09:00:00Z","ends_at":"2030-01-02T09:30:00Z"}`),
	}
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		writeAction(w, a, true)
	}
}

// discard is a ResponseWriter that keeps only the headers.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}
