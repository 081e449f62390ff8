package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/oncecall/oncecall/internal/booking"
	"github.com/oncecall/oncecall/internal/canon"
	"github.com/oncecall/oncecall/internal/fault"
)

// A failure whose transaction rolled back claimed nothing: Dasha must retry
// it (503), never hear 500-as-final or a 4xx.
func TestDashaErrorRetriesWhatClaimedNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err    error
		status int
	}{
		{fmt.Errorf("complete action: %w", errors.New("boom")), http.StatusServiceUnavailable},
		{fault.New(fault.Unavailable, "down"), http.StatusServiceUnavailable},
		{fault.New(fault.Forbidden, "org"), http.StatusForbidden},
		{fault.Field("type", "must be ToolWebHookPayload"), http.StatusBadRequest},
	}
	for _, c := range cases {
		w := httptest.NewRecorder()
		writeError(w, httptest.NewRequest(http.MethodPost, "/v1/dasha/tools", nil), dashaError(c.err))
		if w.Code != c.status {
			t.Errorf("%v: %d, want %d", c.err, w.Code, c.status)
		}
		if c.status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
			t.Errorf("%v: 503 without Retry-After", c.err)
		}
	}
	if err := dashaError(context.Canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled request became %v", err)
	}
}

func FuzzDecodePayload(f *testing.F) {
	f.Add([]byte(`{"type":"ToolWebHookPayload","status":"Running","callId":"call_abc123","agentId":"a","orgId":"org_123","toolName":"book_appointment","arguments":{"customer_id":"x"},"callAdditionalData":{},"agentAdditionalData":{}}`), "book_appointment")
	f.Add([]byte(`{"type":"ToolWebHookPayload","toolName":"x","arguments":[1,{"a":null}],"sip":{"diversion":[]}}`), "")
	f.Add([]byte(`{"type":"ToolWebHookPayload","callId":5}`), "cancel_appointment")
	f.Add([]byte("\xff"), "")
	f.Add([]byte(`{"type":"ToolWebHookPayload","toolName":"book_appointment","arguments":{"slot_id":"0197A3B0-0000-7000-8000-000000000002",`+
		`"customer_id":"0197a3b0-0000-7000-8000-000000000001","service":" Zoe\u0308 <cut> ","action_id":"a-1"}}`), "")
	f.Add([]byte(`{"type":"ToolWebHookPayload","toolName":"book_appointment","arguments":"{\"customer_id\":\"0197a3b0-0000-7000-8000-000000000001\", `+
		`\"slot_id\":\"0197a3b0-0000-7000-8000-000000000002\",\"notify\":\"sms\",\"action_id\":null}"}`), "")
	f.Fuzz(func(t *testing.T, body []byte, pathTool string) {
		p, err := decodePayload(body, pathTool)
		if err != nil {
			if fault.CodeOf(err) == fault.Internal {
				t.Fatalf("a bad payload is an internal error: %v", err)
			}
			return
		}
		if p.Type != toolPayloadType || !toolNamePattern.MatchString(p.ToolName) || (pathTool != "" && p.ToolName != pathTool) {
			t.Fatalf("accepted %+v for path tool %q", p, pathTool)
		}
		args, bad := toolArguments(p.Arguments)
		if (args == nil) == (bad == nil) {
			t.Fatalf("toolArguments(%s): args %v, answer %v", p.Arguments, args, bad)
		}
		if bad != nil && (bad.Reason != "invalid_arguments" || bad.Outcome != "rejected") {
			t.Fatalf("bad arguments answered %+v", bad)
		}
		if args == nil {
			return
		}
		// The arguments are handed on canonical, and prepareTool, which
		// decodes them as they are, prepares what Prepare makes of them
		// without their action_id.
		if c, err := canon.Canonical(args); err != nil || !bytes.Equal(c, args) {
			t.Fatalf("toolArguments(%s) = %s, which is not canonical", p.Arguments, args)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(args, &m); err != nil {
			t.Fatal(err)
		}
		var given string
		if id, ok := m["action_id"]; ok && string(id) != "null" && json.Unmarshal(id, &given) != nil {
			return // not a string: invalid_arguments
		}
		delete(m, "action_id")
		rest, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		want, wantErr := booking.Book.Prepare(rest, nil)
		got, gotGiven, _, ok, _ := prepareTool(booking.Book, p.Arguments)
		switch {
		case ok != (wantErr == nil):
			t.Fatalf("prepareTool(%s): ok %v, Prepare: %v", p.Arguments, ok, wantErr)
		case ok && (got.Fingerprint != want.Fingerprint || gotGiven != given):
			t.Fatalf("prepareTool(%s) = %s %q, Prepare: %s %q", p.Arguments, got.Input, gotGiven, want.Input, given)
		}
	})
}
