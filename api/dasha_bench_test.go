package api

import (
	"strconv"
	"testing"

	"github.com/oncecall/oncecall/internal/booking"
)

// BenchmarkDashaToolCallPrepare is what a Dasha tool call costs before the
// idempotency core sees it: the payload's checks and its arguments made the
// operation's prepared request, with the arguments as an object and as a
// JSON string holding one.
func BenchmarkDashaToolCallPrepare(b *testing.B) {
	args := `{"customer_id":"0197a3b0-0000-7000-8000-000000000001","slot_id":"0197a3b0-0000-7000-8000-000000000002",` +
		`"service":"Check-up","notify":"sms"}`
	for _, c := range []struct{ name, arguments string }{
		{"object", args},
		{"string", strconv.Quote(args)},
	} {
		body := []byte(`{"type":"ToolWebHookPayload","status":"running","callId":"call-7f3a","agentId":"agent-1",` +
			`"orgId":"org-1","toolName":"book_appointment","arguments":` + c.arguments + `,` +
			`"endpoint":"+14155550123","sip":{"fromUser":"+14155550123"},"callAdditionalData":{"source":"inbound"}}`)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p, err := decodePayload(body, "book_appointment")
				if err != nil {
					b.Fatal(err)
				}
				if _, _, ans, ok, err := prepareTool(booking.Book, p.Arguments); !ok {
					b.Fatal(ans, err)
				}
			}
		})
	}
}
