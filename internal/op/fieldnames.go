package op

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	"github.com/oncecall/oncecall/internal/canon"
	"github.com/oncecall/oncecall/internal/fault"
)

// encoding/json matches an object's keys to struct fields case-insensitively
// (with Unicode folding: "ſlot_id" is slot_id), and when two keys match one
// field the last one wins. So {"slot_id":A,"Slot_id":B} would decode as B,
// and {"SLOT_ID":A} as A, although neither key is a field the API names.
// CheckFieldNames closes that: every key that reaches a struct field must be
// its exact name.

// CheckFieldNames checks the keys of the canonical JSON c (the output of
// canon.Canonical) against the struct fields of v's type, at every depth
// where v's type is a struct (a type with its own UnmarshalJSON is left to
// it). A key that is not the exact name of a field but matches one the way
// encoding/json would (ignoring case) is refused as an unknown field; other
// keys are left to the caller (op.Decode refuses them, a webhook tolerates
// them). It scans c (canon.Members) instead of decoding it: what lies under
// a field that is raw JSON or a plain value is skipped, not parsed.
func CheckFieldNames(c []byte, v any) error {
	return checkNames(c, reflect.TypeOf(v), "")
}

// CheckFieldNamesAt is CheckFieldNames for c, a canonical object found at
// path in a larger document (path is empty or ends with "."), decoded on its
// own: the field an error names is the whole path.
func CheckFieldNamesAt(c []byte, v any, path string) error {
	return checkNames(c, reflect.TypeOf(v), path)
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func checkNames(c []byte, t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		// Not an object, Members yields nothing: a type error, which the
		// decoder reports. Canonical keys are sorted, so the field an answer
		// names is the same every time.
		fields := structFields(t)
		for quoted, v := range canon.Members(c) {
			k := keyOf(quoted)
			ft, ok := fields[string(k)]
			if !ok {
				ks := string(k)
				for name := range fields {
					if strings.EqualFold(ks, name) {
						return fault.Field(shorten(path+ks), "is not a known field (field names are exact: did you mean %s?)", path+name)
					}
				}
				continue
			}
			if holdsObjects(ft) {
				if err := checkNames(v, ft, path+string(k)+"."); err != nil {
					return err
				}
			}
		}
	case reflect.Map:
		if !holdsObjects(t.Elem()) {
			return nil
		}
		for quoted, v := range canon.Members(c) {
			if err := checkNames(v, t.Elem(), path+string(keyOf(quoted))+"."); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if !holdsObjects(t.Elem()) {
			return nil
		}
		for v := range canon.Elements(c) {
			if err := checkNames(v, t.Elem(), path); err != nil {
				return err
			}
		}
	}
	return nil
}

// keyOf is the key a canonical JSON string spells: quoted's own bytes when
// it has no escape, so that looking it up allocates nothing.
func keyOf(quoted []byte) []byte {
	if bytes.IndexByte(quoted, '\\') < 0 {
		return quoted[1 : len(quoted)-1]
	}
	var k string
	_ = json.Unmarshal(quoted, &k) // canonical: always valid
	return []byte(k)
}

// holdsObjects reports whether a value of type t can hold a JSON object
// whose keys checkNames checks: a struct, map, slice or array (or a pointer
// to one). Under any other field there is nothing to check.
func holdsObjects(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map, reflect.Slice, reflect.Array:
		return true
	}
	return false
}

var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

// structFields maps the JSON name of each field encoding/json decodes into
// (promoted fields of embedded structs included) to its type.
func structFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for f := range t.Fields() {
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			ft := f.Type
			if f.Anonymous && name == "" {
				for ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if _, taken := m[name]; !taken {
				m[name] = f.Type
			}
		}
	}
	walk(t)
	fieldCache.Store(t, m)
	return m
}
