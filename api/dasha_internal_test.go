package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

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
	})
}
