package op_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/oncecall/oncecall/internal/canon"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/op"
)

type leaf struct {
	SlotID string `json:"slot_id"`
}

type tree struct {
	Name   string          `json:"name"`
	Count  int             `json:"count"`
	Raw    json.RawMessage `json:"raw"`
	One    *leaf           `json:"one"`
	Many   []leaf          `json:"many"`
	ByName map[string]leaf `json:"by_name"`
	Tags   map[string]int  `json:"tags"`
}

// CheckFieldNames refuses a case variant of a field's name at every depth a
// struct is reached (through a pointer, a slice, a map), and leaves alone
// what lies under plain values and raw JSON.
func TestCheckFieldNamesAtEveryDepth(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ body, field string }{
		{`{"Name":"a"}`, "Name"},
		{`{"one":{"Slot_id":"s"}}`, "one.Slot_id"},
		{`{"many":[{"slot_id":"s"},{"SLOT_ID":"s"}]}`, "many.SLOT_ID"},
		{`{"by_name":{"x":{"ſlot_id":"s"}}}`, "by_name.x.ſlot_id"},
		{`{"by_name":{"x\"y":{"Slot_id":"s"}}}`, `by_name.x"y.Slot_id`},
		{`{"Na\u006de":"a"}`, "Name"},
	} {
		err := op.CheckFieldNames(mustCanon(t, c.body), &tree{})
		var f *fault.Error
		if !errors.As(err, &f) || f.Field != c.field {
			t.Errorf("%s: %v, want the field %s refused", c.body, err, c.field)
		}
	}
	for _, body := range []string{
		`{"name":"a","count":1,"raw":{"Slot_id":1},"tags":{"Slot_id":2},"unknown":{"Slot_id":3}}`,
		`{"one":{"slot_id":"s"},"many":[{"slot_id":"s"}],"by_name":{"Slot_id":{"slot_id":"s"}}}`,
		`{"one":null,"many":null,"by_name":null}`,
	} {
		if err := op.CheckFieldNames(mustCanon(t, body), &tree{}); err != nil {
			t.Errorf("%s: %v, want no refusal", body, err)
		}
	}
}

func mustCanon(t *testing.T, s string) []byte {
	t.Helper()
	c, err := canon.Canonical([]byte(s))
	if err != nil {
		t.Fatalf("canonical %s: %v", s, err)
	}
	return c
}
