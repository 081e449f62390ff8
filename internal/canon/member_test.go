package canon

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCut(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, key, value, rest string
		found                bool
	}{
		{`{"action_id":"a-1","slot_id":"s"}`, "action_id", `"a-1"`, `{"slot_id":"s"}`, true},
		{`{"a":1,"action_id":null,"z":[1,{"action_id":2}]}`, "action_id", `null`, `{"a":1,"z":[1,{"action_id":2}]}`, true},
		{`{"a":{"action_id":"x"},"b":"}\"action_id\":"}`, "action_id", ``, `{"a":{"action_id":"x"},"b":"}\"action_id\":"}`, false},
		{`{"a":"x","action_id":{"k":["]","}"]}}`, "action_id", `{"k":["]","}"]}`, `{"a":"x"}`, true},
		{`{"action_id":true}`, "action_id", `true`, `{}`, true},
		{`{}`, "action_id", ``, `{}`, false},
		{`{"q\"k":-1.5}`, `q"k`, `-1.5`, `{}`, true},
		{`{"a\\":1,"b":2}`, `a\`, `1`, `{"b":2}`, true},
	} {
		value, rest, found := Cut([]byte(c.in), c.key)
		if string(value) != c.value || string(rest) != c.rest || found != c.found {
			t.Errorf("Cut(%s, %q) = %s, %s, %v; want %s, %s, %v", c.in, c.key, value, rest, found, c.value, c.rest, c.found)
		}
		if string(rest) != string(mustCanonical(t, string(rest))) {
			t.Errorf("Cut(%s, %q): rest %s is not canonical", c.in, c.key, rest)
		}
	}
}

// Cut leaves its input as it was: rest is a new slice when it found the key.
func TestCutKeepsInput(t *testing.T) {
	t.Parallel()
	in := []byte(`{"a":1,"action_id":"x","b":2}`)
	_, rest, _ := Cut(in, "a")
	rest[1] = 'Z'
	if string(in) != `{"a":1,"action_id":"x","b":2}` {
		t.Errorf("Cut changed its input: %s", in)
	}
}

// Cutting any top-level member of any canonical object of the test corpus
// leaves what encoding/json's view of the object without it canonicalises
// to, and its value as it was.
func TestCutCorpus(t *testing.T) {
	t.Parallel()
	for _, in := range corpus() {
		c, err := Canonical(in)
		if err != nil || len(c) == 0 || c[0] != '{' {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(c, &m); err != nil {
			t.Fatal(err)
		}
		for k, v := range m {
			value, rest, found := Cut(c, k)
			delete(m, k)
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			m[k] = v
			if want := mustCanonical(t, string(b)); !found || string(value) != string(v) || string(rest) != string(want) {
				t.Errorf("Cut(%s, %q) = %s, %s, %v; want %s, %s", c, k, value, rest, found, v, want)
			}
		}
	}
}

// Members and Elements see what encoding/json sees, in order.
func TestMembersAndElements(t *testing.T) {
	t.Parallel()
	c := mustCanonical(t, `{"z":[1,"a,]",{"k":[]},null,-2.5e1],"a\"b":{"x":{}},"m":"}"}`)
	var got []string
	for k, v := range Members(c) {
		got = append(got, string(k)+"="+string(v))
	}
	want := `"a\"b"={"x":{}} "m"="}" "z"=[1,"a,]",{"k":[]},null,-25]`
	if strings.Join(got, " ") != want {
		t.Errorf("Members(%s) = %s, want %s", c, strings.Join(got, " "), want)
	}
	got = nil
	for _, v := range Members(c) {
		for e := range Elements(v) {
			got = append(got, string(e))
		}
	}
	if want := `1 "a,]" {"k":[]} null -25`; strings.Join(got, " ") != want {
		t.Errorf("Elements = %s, want %s", strings.Join(got, " "), want)
	}
	for range Members([]byte(`{}`)) {
		t.Error("Members({}) yields")
	}
	for range Elements([]byte(`[]`)) {
		t.Error("Elements([]) yields")
	}
}
