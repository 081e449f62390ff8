package op

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// Schema returns the JSON Schema of an operation's input, derived from the
// input struct so that it is declared once. Field tags:
//
//	json:"name"         the property name
//	desc:"..."          its description (what to ask the caller for)
//	required:"true"     the property must be present
//	format:"uuid"       a JSON Schema format (uuid, date-time, email, ...)
//	enum:"a,b"          allowed values
//	maxLength:"200"     longest string
//	pattern:"^...$"     a regular expression the string must match
//	minimum/maximum     integer bounds
func Schema(o Operation) map[string]any { return SchemaOf(o.Input()) }

// SchemaOf is Schema for any input struct value, for inputs that are not
// operations (read-only tools).
func SchemaOf(in any) map[string]any { return schemaOf(reflect.TypeOf(in)) }

// schemaer is a field type that describes its own schema (op.Integer,
// op.Patch).
type schemaer interface{ JSONSchema() map[string]any }

func schemaOf(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(reflect.TypeFor[schemaer]()) {
		return reflect.Zero(t).Interface().(schemaer).JSONSchema()
	}
	if t == reflect.TypeFor[json.Number]() {
		return map[string]any{"type": "integer"}
	}
	switch t.Kind() {
	case reflect.Struct:
		props := map[string]any{}
		var required []string
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			p := schemaOf(f.Type)
			if d := f.Tag.Get("desc"); d != "" {
				p["description"] = d
			}
			for _, k := range []string{"format", "pattern"} {
				if v := f.Tag.Get(k); v != "" {
					p[k] = v
				}
			}
			for _, k := range []string{"maxLength", "minimum", "maximum", "minLength"} {
				if v := f.Tag.Get(k); v != "" {
					n, _ := strconv.ParseInt(v, 10, 64)
					p[k] = n
				}
			}
			if v := f.Tag.Get("enum"); v != "" {
				p["enum"] = strings.Split(v, ",")
			}
			if f.Tag.Get("required") == "true" {
				required = append(required, name)
			}
			props[name] = p
		}
		s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			s["required"] = required
		}
		return s
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaOf(t.Elem())}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": schemaOf(t.Elem())}
	}
	return map[string]any{}
}
