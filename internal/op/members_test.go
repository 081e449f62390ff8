package op

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/oncecall/oncecall/internal/canon"
	"github.com/oncecall/oncecall/internal/fault"
)

type flatEnvelope struct {
	Type      string          `json:"type"`
	CallID    string          `json:"callId"`
	Arguments json.RawMessage `json:"arguments"`
	Endpoint  json.RawMessage `json:"endpoint"`
}

type flatInput struct {
	CustomerID string `json:"customer_id"`
	SlotID     string `json:"slot_id"`
	Service    string `json:"service"`
}

// The one walk (decodeMembers) decodes what the general path decodes and
// refuses what it refuses, with the same error: for a webhook,
// CheckFieldNames then encoding/json; for arguments, canon.Cut then
// decodeCanonical.
func TestDecodeMembersIsTheGeneralPath(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"type":"ToolWebHookPayload","callId":"c-1","arguments":{"a":[1,{"b":null}]},"endpoint":"+1415","extra":{"x":1}}`,
		`{"type":"T","callId":null,"arguments":null}`,
		`{"type":"caf\u00e9 \"quoted\" \\ \n","callId":"\u0001"}`,
		`{"type":7,"callId":"c"}`,
		`{"callId":["c"],"type":{"a":1}}`,
		`{"callid":"c","type":"T"}`,
		`{"CallId":"c","type":7}`,
		`{"type":true,"zzz":1,"TYPE":"x"}`,
		`{"customer_id":"0197a3b0","slot_id":"s","service":"Cut & colour"}`,
		`{"customer_id":"c","action_id":"a-1","slot_id":"s"}`,
		`{"customer_id":"c","action_id":7,"Slot_id":"s"}`,
		`{"customer_id":1,"extra":"x","slot_id":"s"}`,
		`{"a\u0000b":1,"customer_id":"c"}`,
		`{"extra":"x","customer_id":1}`,
		`{"service":null,"slot_id":{"x":1}}`,
		`{}`,
	} {
		c, err := canon.Canonical([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		var got, want flatEnvelope
		ok, gotErr := DecodeWebhook(c, &got)
		wantErr := CheckFieldNames(c, &want)
		if wantErr == nil {
			if err := json.Unmarshal(c, &want); err != nil {
				typeErr := err.(*json.UnmarshalTypeError)
				wantErr = fault.Field(typeErr.Field, "must be a string")
			}
		}
		same(t, "webhook "+body, ok, got, want, gotErr, wantErr)

		var in, wantIn flatInput
		cut, ok, gotErr := decodeMembers(c, &in, "", "action_id", false)
		wantCut, rest, _ := canon.Cut(c, "action_id")
		wantErr = decodeCanonical(rest, &wantIn)
		if string(cut) != string(wantCut) {
			t.Errorf("arguments %s: cut %s, want %s", body, cut, wantCut)
		}
		same(t, "arguments "+body, ok, in, wantIn, gotErr, wantErr)
	}
}

func same[T any](t *testing.T, name string, ok bool, got, want T, gotErr, wantErr error) {
	t.Helper()
	switch {
	case !ok:
		t.Errorf("%s: not decoded in one walk", name)
	case (gotErr == nil) != (wantErr == nil):
		t.Errorf("%s: error %v, want %v", name, gotErr, wantErr)
	case gotErr != nil:
		g, w := fault.As(gotErr), fault.As(wantErr)
		if g.Code != w.Code || g.Field != w.Field || g.Message != w.Message {
			t.Errorf("%s: error %v, want %v", name, gotErr, wantErr)
		}
	case !reflect.DeepEqual(got, want):
		t.Errorf("%s: decoded %+v, want %+v", name, got, want)
	}
}

// A struct holding anything but strings and raw JSON takes the general path.
func TestDecodeMembersOnlyFlatStructs(t *testing.T) {
	t.Parallel()
	var m map[string]json.RawMessage
	var n struct {
		N int `json:"n"`
	}
	var tagged struct {
		S string `json:"s,omitempty"`
	}
	for _, v := range []any{&m, &n, &tagged, flatInput{}} {
		if _, ok, _ := decodeMembers([]byte(`{}`), v, "", "", true); ok {
			t.Errorf("%T decoded in one walk", v)
		}
	}
}
