package api

import (
	"bytes"
	"cmp"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"
	"github.com/oncecall/oncecall"
)

// The envelope and the problem of a rejection are written without
// encoding/json; they must stay byte for byte what encoding/json wrote, or
// replays of actions completed before would differ from their first answer.
func TestAnswersMatchEncodingJSON(t *testing.T) {
	t.Parallel()
	id := uuid.MustParse("0197a3b0-0000-7000-8000-00000000000a")
	confirmed := func(result string) oncecall.Action {
		a := oncecall.Action{ID: id, Operation: "appointment.book", State: oncecall.Completed, Outcome: oncecall.Confirmed,
			Status: http.StatusCreated, ResourceID: "0197a3b0-0000-7000-8000-000000000000"}
		if result != "-" {
			a.Result = []byte(result)
		}
		return a
	}
	cases := map[string]oncecall.Action{
		"marshalled result":      confirmed(`{"id":"x","name":"Zoë Ångström","note":"a \"b\" \\ c\n"}`),
		"whitespace in result":   confirmed("{ \"id\" : \"x\",\n\t\"n\": [1, 2] }\r\n"),
		"carriage return":        confirmed("{\"a\":1}\r"),
		"space after a string":   confirmed(`{"id":"x", "n":1}`),
		"< in result":            confirmed(`{"note":"a<b"}`),
		"> in result":            confirmed(`{"note":"a>b"}`),
		"& in result":            confirmed(`{"note":"a&b"}`),
		"U+2028 in result":       confirmed("{\"note\":\"a\u2028b\"}"),
		"U+2029 in result":       confirmed("{\"note\":\"a\u2029b\"}"),
		"other E2 in result":     confirmed("{\"note\":\"a\u2026b\u20acc\"}"),
		"pruned result":          confirmed("-"),
		"scalar result":          confirmed(`"done"`),
		"no resource, no result": {ID: id, Operation: "x.y", State: oncecall.Completed, Outcome: oncecall.Confirmed},
		"pending":                {ID: id, Operation: "payment.charge", State: oncecall.Unknown},
		"pending with a reason":  {ID: id, Operation: "payment.charge", State: oncecall.Running, Reason: "A<B>&\"é\u2028"},
		"odd operation name":     {ID: id, Operation: "op<&>\"\\\x01é", State: oncecall.Completed, Outcome: oncecall.Confirmed, Status: 200},
	}
	for name, a := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			status := cmp.Or(a.Status, http.StatusOK)
			if a.State != oncecall.Completed {
				status = http.StatusAccepted
			}
			got, want := httptest.NewRecorder(), httptest.NewRecorder()
			writeEnvelope(got, status, a)
			writeJSON(want, status, envelope(a))
			same(t, got, want)
		})
	}
	for name, details := range map[string]string{
		"none":       "",
		"marshalled": `{"slot_id":"s","customer_id":"c"}`,
		"spaced":     `{ "slot_id" : "s" }`,
		"html":       `{"why":"a<b"}`,
	} {
		t.Run("rejection details "+name, func(t *testing.T) {
			t.Parallel()
			a := oncecall.Action{ID: id, Operation: "appointment.book", State: oncecall.Completed, Outcome: oncecall.Rejected,
				Status: http.StatusUnprocessableEntity, Reason: "SLOT_UNAVAILABLE"}
			if details != "" {
				a.Result = []byte(details)
			}
			got := httptest.NewRecorder()
			writeAction(got, a, true)
			p := Problem{
				Type: "about:blank", Title: "Unprocessable Entity", Status: http.StatusUnprocessableEntity,
				Code: a.Reason, Detail: "the action was rejected: " + a.Reason, ActionID: id.String(),
				Outcome: "rejected", State: "completed", StatusURL: statusURL(id.String()), Details: a.Result,
			}
			want, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Body.Bytes(), want) {
				t.Errorf("body\n got %s\nwant %s", got.Body.Bytes(), want)
			}
		})
	}
}

// What encoding/json wrote is copied as it is, without a second pass.
func TestMarshalledResultsAreCopied(t *testing.T) {
	t.Parallel()
	for _, v := range []any{
		map[string]any{"name": "Zoë  Ångström", "note": "say \"hi\"\\ \t\n", "n": []int{1, 2}, "ok": true},
		"a<b>&c\u2028\u2029", []string{" ", "\\", `\"`, ""}, `" x`, nil, 1.5,
	} {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if !marshalledForm(raw) {
			t.Errorf("%s is encoding/json's output but is not copied as it is", raw)
		}
	}
}

func same(t *testing.T, got, want *httptest.ResponseRecorder) {
	t.Helper()
	if got.Code != want.Code || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
		t.Errorf("status %d %q, want %d %q", got.Code, got.Header().Get("Content-Type"), want.Code, want.Header().Get("Content-Type"))
	}
	if !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
		t.Errorf("body\n got %s\nwant %s", got.Body.Bytes(), want.Body.Bytes())
	}
}

// FuzzAppendRawJSON checks the copy of a stored body against what
// encoding/json writes for it, for every valid JSON text.
func FuzzAppendRawJSON(f *testing.F) {
	for _, s := range []string{
		`{"id":"x"}`, `{ "a" : [1, 2] }`, `"<&>"`, "\"\u2028\"", `{"a":"b\\\" c"}`, `[]`, `null`, " 1 ",
		`{"s":"\\\\"," ":" "}`, "{\"a\":\"\xe2\x80\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		want, err := json.Marshal(json.RawMessage(raw))
		if err != nil {
			t.Fatalf("encoding/json rejects valid %q: %v", raw, err)
		}
		got, err := appendRawJSON(nil, raw)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("appendRawJSON(%q) = %q, %v; encoding/json writes %q", raw, got, err, want)
		}
	})
}
