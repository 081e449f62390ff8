package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

func (e recordsEnv) putTemplate(name, key string, body any) apptest.Response {
	e.t.Helper()
	return e.Request(http.MethodPut, "/v1/message-templates/"+name, e.key, body, "Idempotency-Key", key)
}

// outbox reads one message row: its text and template version (0 for a
// built-in template).
func (e recordsEnv) outbox(id string) (body string, version int) {
	e.t.Helper()
	var v *int
	if err := e.Store.Pool().QueryRow(e.t.Context(),
		"SELECT body, template_version FROM messages WHERE id = $1 AND tenant_id = $2", id, e.tenant).Scan(&body, &v); err != nil {
		e.t.Fatalf("read message %s: %v", id, err)
	}
	if v != nil {
		version = *v
	}
	return body, version
}

var tableReady = map[string]any{
	"name": "table_ready", "subject": "Your table at {{.place}}",
	"body":      "Hello {{.name}}, your table at {{.place}} is ready{{if .note}} ({{.note}}){{end}}.",
	"variables": map[string]any{"required": []string{"place", "name"}, "optional": []string{"note"}},
}

// TestTenantTemplateIsUsedAndVersioned: a created template is what sends
// render; an update makes version 2, which new sends use, while the action
// that sent with version 1 keeps its text in the outbox and in every replay.
func TestTenantTemplateIsUsedAndVersioned(t *testing.T) {
	t.Parallel()
	e := setupRecords(t)
	c := e.customer("+442079460111", "ana@example.com")

	created := e.Post("/v1/message-templates", e.key, "tpl-1", tableReady)
	if created.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", created.Status, created.Body)
	}
	if v := resultOf(t, created); v["version"] != float64(1) || v["builtin"] != false || v["name"] != "table_ready" {
		t.Fatalf("created: %s", created.Body)
	}
	if n := e.Count("SELECT count(*) FROM message_templates WHERE tenant_id = $1 AND name = 'table_ready' AND version = 1", e.tenant); n != 1 {
		t.Fatalf("template rows = %d", n)
	}
	// The create is an action like any write: its retry replays, a second
	// create of the name is a rejection, stored like any other.
	if again := e.Post("/v1/message-templates", e.key, "tpl-1", tableReady); !again.Replayed() || !bytes.Equal(again.Body, created.Body) {
		t.Fatalf("create retry: %d %s", again.Status, again.Body)
	}
	dup := e.Post("/v1/message-templates", e.key, "tpl-2", tableReady)
	if dup.Status != http.StatusUnprocessableEntity || dup.JSON(t)["code"] != "TEMPLATE_EXISTS" {
		t.Fatalf("second create: %d %s", dup.Status, dup.Body)
	}

	send := func(key, note string) apptest.Response {
		vars := map[string]string{"name": "Ana", "place": "Luigi's"}
		if note != "" {
			vars["note"] = note
		}
		return e.Post("/v1/messages", e.key, key, map[string]any{"customer_id": c, "channel": "email", "template": "table_ready", "variables": vars})
	}
	first := send("send-1", "by the window")
	if first.Status != http.StatusCreated {
		t.Fatalf("send with v1: %d %s", first.Status, first.Body)
	}
	m1 := resultOf(t, first)
	const v1Text = "Hello Ana, your table at Luigi's is ready (by the window)."
	if m1["body"] != v1Text || m1["subject_line"] != "Your table at Luigi's" || m1["template_version"] != float64(1) {
		t.Fatalf("v1 message: %v", m1)
	}
	if body, v := e.outbox(m1["id"].(string)); body != v1Text || v != 1 {
		t.Fatalf("outbox row of v1: %q v%d", body, v)
	}

	update := e.putTemplate("table_ready", "tpl-3", map[string]any{
		"subject": "Table ready", "body": "{{.name}}, come in: your table is ready.",
		"variables": map[string]any{"required": []string{"name"}, "optional": []string{"note", "place"}},
	})
	if update.Status != http.StatusOK || resultOf(t, update)["version"] != float64(2) {
		t.Fatalf("update: %d %s", update.Status, update.Body)
	}
	if n := e.Count("SELECT count(*) FROM message_templates WHERE tenant_id = $1 AND name = 'table_ready'", e.tenant); n != 2 {
		t.Fatalf("versions stored = %d, want 2", n)
	}

	second := send("send-2", "")
	m2 := resultOf(t, second)
	if second.Status != http.StatusCreated || m2["body"] != "Ana, come in: your table is ready." || m2["template_version"] != float64(2) {
		t.Fatalf("send with v2: %d %s", second.Status, second.Body)
	}
	if body, v := e.outbox(m2["id"].(string)); v != 2 || body != m2["body"] {
		t.Fatalf("outbox row of v2: %q v%d", body, v)
	}
	// The first action's retry is its stored answer: v1's text, not v2's.
	replay := send("send-1", "by the window")
	if !replay.Replayed() || !bytes.Equal(replay.Body, first.Body) {
		t.Fatalf("replay of the v1 send: %d %s", replay.Status, replay.Body)
	}
	if body, v := e.outbox(m1["id"].(string)); body != v1Text || v != 1 {
		t.Fatalf("the v1 outbox row changed: %q v%d", body, v)
	}
	if n := e.Count("SELECT count(*) FROM messages WHERE tenant_id = $1", e.tenant); n != 2 {
		t.Fatalf("messages = %d, want 2", n)
	}

	list := e.Get("/v1/message-templates", e.key)
	var l struct {
		Templates []struct {
			Name    string `json:"name"`
			Version int    `json:"version"`
			Builtin bool   `json:"builtin"`
			Body    string `json:"body"`
		} `json:"templates"`
	}
	if err := json.Unmarshal(list.Body, &l); err != nil || list.Status != http.StatusOK {
		t.Fatalf("list: %d %s", list.Status, list.Body)
	}
	var names []string
	for _, tp := range l.Templates {
		names = append(names, tp.Name)
		if tp.Name == "table_ready" && (tp.Version != 2 || tp.Builtin || !strings.Contains(tp.Body, "come in")) {
			t.Errorf("listed %+v, want version 2", tp)
		}
		if tp.Name == "generic" && (!tp.Builtin || tp.Version != 0) {
			t.Errorf("listed %+v, want the built-in", tp)
		}
	}
	if strings.Join(names, ",") != "appointment_confirmation,appointment_reminder,generic,payment_receipt,table_ready" {
		t.Fatalf("listed %v", names)
	}
	if missing := e.putTemplate("no_such", "tpl-4", map[string]any{"body": "x"}); missing.Status != http.StatusUnprocessableEntity ||
		missing.JSON(t)["code"] != "TEMPLATE_NOT_FOUND" {
		t.Fatalf("update of an unknown template: %d %s", missing.Status, missing.Body)
	}
}

// TestTemplateMistakesAre400AndStoreNothing: a declaration that does not
// parse or uses an undeclared variable, and a send whose variables do not
// fit the tenant's template, are 400 naming the field; nothing is claimed,
// so the same key works once the request is fixed.
func TestTemplateMistakesAre400AndStoreNothing(t *testing.T) {
	t.Parallel()
	e := setupRecords(t)
	bad := []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"name": "t1", "body": "Hi {{.name}}"}, "body"},
		{map[string]any{"name": "t1", "body": "Hi {{.name", "variables": map[string]any{"required": []string{"name"}}}, "body"},
		{map[string]any{"name": "t1", "body": "{{range .name}}x{{end}}", "variables": map[string]any{"required": []string{"name"}}}, "body"},
		{map[string]any{"name": "t1", "subject": "For {{.who}}", "body": "x"}, "subject"},
		{map[string]any{"name": "T1", "body": "x"}, "name"},
		{map[string]any{"name": "t1", "body": "x", "variables": map[string]any{"required": []string{"a"}, "optional": []string{"a"}}}, "variables.optional"},
		{map[string]any{"name": "generic", "body": "{{.body}}", "variables": map[string]any{"required": []string{"body"}}}, "variables"},
	}
	for _, b := range bad {
		r := e.Post("/v1/message-templates", e.key, "create", b.body)
		if p := r.JSON(t); r.Status != http.StatusBadRequest || p["code"] != "INVALID_INPUT" || p["field"] != b.field {
			t.Errorf("%v: %d %s, want 400 naming %s", b.body, r.Status, r.Body, b.field)
		}
	}
	if n := e.Count("SELECT count(*) FROM message_templates") + e.Count("SELECT count(*) FROM actions"); n != 0 {
		t.Fatalf("bad declarations stored %d rows", n)
	}
	if r := e.Post("/v1/message-templates", e.key, "create", tableReady); r.Status != http.StatusCreated || r.Replayed() {
		t.Fatalf("the key was not free after 400s: %d %s", r.Status, r.Body)
	}

	to := "+442079460112"
	sends := []struct {
		vars  map[string]string
		field string
	}{
		{map[string]string{"name": "Ana", "place": "Luigi's", "colour": "red"}, "variables.colour"},
		{map[string]string{"name": "Ana"}, "variables.place"},
		{map[string]string{"name": "Ana", "place": "  "}, "variables.place"},
	}
	for _, s := range sends {
		r := e.Post("/v1/messages", e.key, "send", map[string]any{"to": to, "channel": "sms", "template": "table_ready", "variables": s.vars})
		if p := r.JSON(t); r.Status != http.StatusBadRequest || p["field"] != s.field {
			t.Errorf("%v: %d %s, want 400 naming %s", s.vars, r.Status, r.Body, s.field)
		}
	}
	r := e.Post("/v1/messages", e.key, "send", map[string]any{"to": to, "channel": "sms", "template": "tabel_ready", "variables": map[string]string{"name": "Ana"}})
	if p := r.JSON(t); r.Status != http.StatusBadRequest || p["field"] != "template" || !strings.Contains(p["detail"].(string), "table_ready") {
		t.Fatalf("unknown template: %d %s, want 400 listing the tenant's templates", r.Status, r.Body)
	}
	if n := e.Count("SELECT count(*) FROM messages") + e.Count("SELECT count(*) FROM actions WHERE operation = 'message.send'"); n != 0 {
		t.Fatalf("bad sends stored %d rows", n)
	}
	ok := e.Post("/v1/messages", e.key, "send", map[string]any{"to": to, "channel": "sms", "template": "table_ready", "variables": map[string]string{"name": "Ana", "place": "Luigi's"}})
	if ok.Status != http.StatusCreated || ok.Replayed() {
		t.Fatalf("the send key was not free after 400s: %d %s", ok.Status, ok.Body)
	}
}

// TestTemplatesBelongToTheirTenant: another tenant neither sees nor sends a
// tenant's template, and a template named like a built-in overrides it for
// its tenant only, including a booking's confirmation.
func TestTemplatesBelongToTheirTenant(t *testing.T) {
	t.Parallel()
	e := setupRecords(t)
	if r := e.Post("/v1/message-templates", e.key, "tpl", tableReady); r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	override := map[string]any{
		"name": "appointment_confirmation", "subject": "Booked!", "body": "{{.name}}, see you {{.when}} at Luigi's.",
		"variables": map[string]any{"required": []string{"name", "when"}},
	}
	if r := e.Post("/v1/message-templates", e.key, "override", override); r.Status != http.StatusCreated {
		t.Fatalf("override: %d %s", r.Status, r.Body)
	}

	other, otherKey := e.Tenant("other")
	list := e.Get("/v1/message-templates", otherKey)
	if list.Status != http.StatusOK || bytes.Contains(list.Body, []byte("table_ready")) || bytes.Contains(list.Body, []byte("Luigi")) {
		t.Fatalf("the other tenant lists: %s", list.Body)
	}
	vars := map[string]string{"name": "Bo", "place": "Luigi's"}
	r := e.Post("/v1/messages", otherKey, "steal", map[string]any{"to": "+442079460113", "channel": "sms", "template": "table_ready", "variables": vars})
	if r.Status != http.StatusBadRequest || r.JSON(t)["field"] != "template" || bytes.Contains(r.Body, []byte("table_ready")) {
		t.Fatalf("the other tenant sends with it: %d %s", r.Status, r.Body)
	}
	// The other tenant still has the built-in appointment_confirmation.
	theirs := e.Post("/v1/messages", otherKey, "builtin", map[string]any{"to": "+442079460113", "channel": "sms",
		"template": "appointment_confirmation", "variables": map[string]string{"name": "Bo", "when": "Monday"}})
	if resultOf(t, theirs)["body"] != "Hello Bo, your appointment on Monday is confirmed." {
		t.Fatalf("other tenant's confirmation: %s", theirs.Body)
	}
	if n := e.Count("SELECT count(*) FROM messages WHERE tenant_id = $1 AND template_version IS NULL", other.ID); n != 1 {
		t.Fatalf("the other tenant's message is not from the built-in: %d", n)
	}

	// This tenant's booking confirmation uses its override.
	c := e.customer("+442079460114", "")
	slot := e.Slot(e.tenant, 3)
	book := e.Post("/v1/appointments", e.key, "book", map[string]any{"customer_id": c, "slot_id": slot, "notify": "sms"})
	// No messaging provider: the confirmation is recorded in the outbox.
	if book.Status != http.StatusCreated || resultOf(t, book)["confirmation"] != "recorded" {
		t.Fatalf("book: %d %s", book.Status, book.Body)
	}
	var body string
	var version int
	if err := e.Store.Pool().QueryRow(t.Context(), "SELECT body, template_version FROM messages WHERE customer_id = $1", c).Scan(&body, &version); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(body, "at Luigi's.") || version != 1 {
		t.Fatalf("confirmation %q v%d, want the override", body, version)
	}
}

// TestDashaSendsWithTenantTemplates: the send_message tool takes a tenant's
// template; variables that do not fit it are invalid_arguments naming the
// field, and nothing is claimed.
func TestDashaSendsWithTenantTemplates(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	if r := d.Post("/v1/message-templates", d.key, "tpl", tableReady); r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	args := map[string]any{"customer_id": d.customer, "channel": "sms", "template": "table_ready",
		"variables": map[string]any{"name": "Ana", "place": "Luigi's", "colour": "red"}}
	a := decodeAnswer(t, d.call("send_message", "call_tpl", args))
	if a.Reason != "invalid_arguments" || a.ActionID != "" || !strings.Contains(a.Say, "variables.colour") {
		t.Fatalf("unknown variable: %+v", a)
	}
	args["template"] = "nope"
	if a := decodeAnswer(t, d.call("send_message", "call_tpl", args)); a.Reason != "invalid_arguments" || !strings.Contains(a.Say, "table_ready") {
		t.Fatalf("unknown template: %+v", a)
	}
	if n := d.Count("SELECT count(*) FROM actions WHERE operation = 'message.send'"); n != 0 {
		t.Fatalf("invalid calls claimed %d actions", n)
	}
	// Customers of the fixture have no phone: use a recipient.
	args = map[string]any{"to": "+442079460115", "channel": "sms", "template": "table_ready",
		"variables": map[string]any{"name": "Ana", "place": "Luigi's"}}
	a = decodeAnswer(t, d.call("send_message", "call_tpl", args))
	var details map[string]any
	_ = json.Unmarshal(a.Details, &details)
	if a.Outcome != "confirmed" || details["body"] != "Hello Ana, your table at Luigi's is ready." || details["template_version"] != float64(1) {
		t.Fatalf("send: %+v %s", a, a.Details)
	}
}

// TestConcurrentTemplateUpdatesEachMakeAVersion: updates racing on one
// template each get their own version number (the loser of the race on the
// version is run again), and none is lost.
func TestConcurrentTemplateUpdatesEachMakeAVersion(t *testing.T) {
	t.Parallel()
	e := setupRecords(t)
	if r := e.Post("/v1/message-templates", e.key, "tpl", tableReady); r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	const n = 6
	answers := concurrently(n, func(i int) apptest.Response {
		return e.putTemplate("table_ready", fmt.Sprintf("update-%d", i), map[string]any{
			"body": fmt.Sprintf("Version from update %d for {{.name}}", i), "variables": map[string]any{"required": []string{"name"}},
		})
	})
	seen := map[float64]bool{}
	for i, r := range answers {
		if r.Status != http.StatusOK {
			t.Fatalf("update %d: %d %s", i, r.Status, r.Body)
		}
		seen[resultOf(t, r)["version"].(float64)] = true
	}
	if len(seen) != n {
		t.Fatalf("versions answered: %v, want %d distinct", seen, n)
	}
	if got := e.Count("SELECT count(DISTINCT version) FROM message_templates WHERE tenant_id = $1 AND name = 'table_ready' AND version BETWEEN 2 AND $2", e.tenant, n+1); got != n {
		t.Fatalf("stored versions 2..%d: %d", n+1, got)
	}
}
