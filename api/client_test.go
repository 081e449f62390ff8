package api_test

import (
	"bytes"
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/oapi-codegen/nullable"
	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/oncecall/oncecall/apiclient"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// clientEnv is a running oncecall with one tenant and the client generated
// from openapi.yaml, authenticated with the tenant's key. The client sends
// through the environment's Contract, so its answers are checked against
// openapi.yaml too.
type clientEnv struct {
	*apptest.Env
	c *apiclient.ClientWithResponses
}

func setupClient(t *testing.T, cfg ...func(*app.Config)) clientEnv {
	t.Helper()
	e := apptest.Start(t, cfg...)
	_, key := e.Tenant("acme")
	return clientEnv{Env: e, c: newClient(t, e, key)}
}

func newClient(t *testing.T, e *apptest.Env, key string) *apiclient.ClientWithResponses {
	t.Helper()
	c, err := apiclient.NewClientWithResponses(e.URL, apiclient.WithHTTPClient(e.Client),
		apiclient.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			if key != "" {
				r.Header.Set("Authorization", "Bearer "+key)
			}
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// must fails the test when a call did not reach the server or answered
// another status than want.
func must[R interface{ StatusCode() int }](t *testing.T, want int, r R, err error) R {
	t.Helper()
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	if r.StatusCode() != want {
		t.Fatalf("status %d, want %d", r.StatusCode(), want)
	}
	return r
}

func (e clientEnv) customer(t *testing.T, name, phone string) uuid.UUID {
	t.Helper()
	in := apiclient.CreateCustomerInput{Name: name}
	if phone != "" {
		in.Phone = &phone
	}
	r, err := e.c.CreateCustomerWithResponse(t.Context(), &apiclient.CreateCustomerParams{IdempotencyKey: uuid.NewString()}, in)
	c, err := must(t, http.StatusCreated, r, err).JSON201.Result.AsCustomer()
	if err != nil {
		t.Fatal(err)
	}
	return c.Id
}

func (e clientEnv) slot(t *testing.T, startsIn time.Duration) apiclient.Slot {
	t.Helper()
	start := time.Now().UTC().Truncate(time.Hour).Add(startsIn)
	r, err := e.c.CreateSlotWithResponse(t.Context(), &apiclient.CreateSlotParams{IdempotencyKey: uuid.NewString()},
		apiclient.CreateSlotInput{StartsAt: start, EndsAt: start.Add(time.Hour)})
	s, err := must(t, http.StatusCreated, r, err).JSON201.Result.AsSlot()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestGeneratedClientBooksOnce books through the generated Go client: the
// booking, its replay with Idempotent-Replayed, a 422 on reuse with another
// slot, the action lookup, a taken slot, a reschedule and a cancel.
func TestGeneratedClientBooksOnce(t *testing.T) {
	t.Parallel()
	e := setupClient(t)
	ctx := t.Context()
	ana, bob := e.customer(t, "Ana", "+442079460101"), e.customer(t, "Bob", "")
	first, second := e.slot(t, 24*time.Hour), e.slot(t, 26*time.Hour)

	slots, err := e.c.ListSlotsWithResponse(ctx, &apiclient.ListSlotsParams{Available: ptr(true), Limit: ptr(10)})
	if got := must(t, http.StatusOK, slots, err).JSON200.Slots; len(got) != 2 || got[0].Id != first.Id || !got[0].Available {
		t.Fatalf("available slots: %+v", got)
	}

	book := apiclient.BookAppointmentInput{CustomerId: ana, SlotId: first.Id}
	params := &apiclient.BookAppointmentParams{IdempotencyKey: "book-ana-1"}
	r, err := e.c.BookAppointmentWithResponse(ctx, params, book)
	booked := must(t, http.StatusCreated, r, err)
	appt, err := booked.JSON201.Result.AsAppointment()
	if err != nil || appt.SlotId.MustGet() != first.Id || appt.CustomerId != ana || appt.Status != apiclient.Active {
		t.Fatalf("booking: %+v %v", appt, err)
	}
	if booked.Headers201.IdempotentReplayed != nil || booked.Headers201.Location != booked.JSON201.StatusUrl {
		t.Fatalf("first answer headers: %+v", booked.Headers201)
	}

	r, err = e.c.BookAppointmentWithResponse(ctx, params, book)
	replay := must(t, http.StatusCreated, r, err)
	if h := replay.Headers201.IdempotentReplayed; h == nil || *h != "true" || !bytes.Equal(replay.Body, booked.Body) {
		t.Fatalf("replay: replayed=%v %s", h, replay.Body)
	}

	r, err = e.c.BookAppointmentWithResponse(ctx, params, apiclient.BookAppointmentInput{CustomerId: ana, SlotId: second.Id})
	reused := must(t, http.StatusUnprocessableEntity, r, err).ApplicationproblemJSON422
	if reused.Code != apiclient.IDEMPOTENCYKEYREUSED || reused.ActionId == nil || *reused.ActionId != booked.JSON201.ActionId {
		t.Fatalf("reuse: %+v", reused)
	}
	if n := e.Count("SELECT count(*) FROM appointments WHERE slot_id = $1", second.Id); n != 0 {
		t.Fatalf("the reused key booked the other slot: %d", n)
	}

	a, err := e.c.GetActionWithResponse(ctx, booked.JSON201.ActionId)
	action := must(t, http.StatusOK, a, err).JSON200
	if action.Outcome != apiclient.OutcomeConfirmed || action.Operation != apiclient.AppointmentBook || action.State != apiclient.StateCompleted ||
		!action.Reason.IsNull() || action.Result.MustGet()["id"] != appt.Id.String() {
		t.Fatalf("action lookup: %+v", action)
	}
	g, err := e.c.GetAppointmentWithResponse(ctx, appt.Id)
	if got := must(t, http.StatusOK, g, err).JSON200; !reflect.DeepEqual(*got, appt) {
		t.Fatalf("appointment: %+v, booked %+v", got, appt)
	}

	r, err = e.c.BookAppointmentWithResponse(ctx, &apiclient.BookAppointmentParams{IdempotencyKey: "book-bob-1"},
		apiclient.BookAppointmentInput{CustomerId: bob, SlotId: first.Id})
	taken := must(t, http.StatusUnprocessableEntity, r, err)
	if p := taken.ApplicationproblemJSON422; p.Code != apiclient.SLOTUNAVAILABLE || p.Outcome == nil || *p.Outcome != apiclient.ProblemOutcomeRejected ||
		taken.Headers422.Location == nil || *taken.Headers422.Location != *p.StatusUrl {
		t.Fatalf("taken slot: %+v %+v", p, taken.Headers422)
	}

	m, err := e.c.RescheduleAppointmentWithResponse(ctx, appt.Id, &apiclient.RescheduleAppointmentParams{IdempotencyKey: "move-ana-1"},
		apiclient.RescheduleAppointmentInput{SlotId: second.Id})
	moved, err := must(t, http.StatusOK, m, err).JSON200.Result.AsAppointment()
	if err != nil || moved.Id != appt.Id || moved.SlotId.MustGet() != second.Id {
		t.Fatalf("reschedule: %+v %v", moved, err)
	}
	c, err := e.c.CancelAppointmentWithBodyWithResponse(ctx, appt.Id, &apiclient.CancelAppointmentParams{IdempotencyKey: "cancel-ana-1"}, "application/json", nil)
	cancelled, err := must(t, http.StatusOK, c, err).JSON200.Result.AsAppointment()
	if err != nil || cancelled.Status != apiclient.Cancelled {
		t.Fatalf("cancel: %+v %v", cancelled, err)
	}
	if n := e.Count("SELECT count(*) FROM appointments WHERE customer_id = $1 AND slot_id = $2 AND status = 'cancelled'", ana, second.Id); n != 1 {
		t.Fatalf("cancelled appointments = %d, want 1", n)
	}
	if n := e.Count("SELECT count(*) FROM appointments"); n != 1 {
		t.Fatalf("appointments = %d, want 1", n)
	}
}

// TestGeneratedClientChargesOnce approves and charges a payment with the
// generated client, through a payments provider (the simulator); a retry
// replays and the intent is captured once.
func TestGeneratedClientChargesOnce(t *testing.T) {
	t.Parallel()
	e := setupClient(t, simPayments(t))
	ctx := t.Context()
	ana := e.customer(t, "Ana", "")
	pi, err := e.c.CreatePaymentIntentWithResponse(ctx, &apiclient.CreatePaymentIntentParams{IdempotencyKey: "intent-1"},
		apiclient.CreatePaymentIntentInput{CustomerId: ana, Amount: 1050, Currency: "eur", Description: ptr("Cleaning")})
	intent, err := must(t, http.StatusCreated, pi, err).JSON201.Result.AsPaymentIntent()
	if err != nil || intent.Currency != "EUR" || intent.Status != apiclient.PaymentIntentStatusRequiresCapture || !intent.CapturedAmount.IsNull() {
		t.Fatalf("intent: %+v %v", intent, err)
	}

	charge := func() *apiclient.ChargePaymentResponse {
		r, err := e.c.ChargePaymentWithResponse(ctx, &apiclient.ChargePaymentParams{IdempotencyKey: "charge-1"},
			apiclient.ChargePaymentInput{PaymentIntentId: intent.Id})
		return must(t, http.StatusCreated, r, err)
	}
	first, again := charge(), charge()
	p, err := first.JSON201.Result.AsRemoteResult()
	if err != nil || p.ProviderRef == "" || p.Request["payment_intent_id"] != intent.Id.String() {
		t.Fatalf("charge: %+v %v", p, err)
	}
	if h := again.Headers201.IdempotentReplayed; h == nil || *h != "true" || !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("charge replay: %v %s", h, again.Body)
	}

	r, err := e.c.ChargePaymentWithResponse(ctx, &apiclient.ChargePaymentParams{IdempotencyKey: "charge-2"},
		apiclient.ChargePaymentInput{PaymentIntentId: intent.Id})
	if p := must(t, http.StatusUnprocessableEntity, r, err).ApplicationproblemJSON422; p.Code != apiclient.INTENTALREADYCAPTURED {
		t.Fatalf("second charge under a new key: %+v", p)
	}
	g, err := e.c.GetPaymentIntentWithResponse(ctx, intent.Id)
	got := must(t, http.StatusOK, g, err).JSON200
	if got.Status != apiclient.PaymentIntentWithPaymentsStatusCaptured || got.CapturedAmount.MustGet() != 1050 || len(got.Payments) != 1 ||
		got.Payments[0].Amount != 1050 || got.Payments[0].Status != apiclient.PaymentStatusSucceeded ||
		got.Payments[0].ProviderRef == nil || *got.Payments[0].ProviderRef != p.ProviderRef {
		t.Fatalf("intent after charge: %+v", got)
	}
	if n := e.Count("SELECT count(*) FROM payments WHERE intent_id = $1", intent.Id); n != 1 {
		t.Fatalf("payments = %d, want 1", n)
	}
}

// TestGeneratedClientSendsAMessage sends an SMS to a customer with the
// generated client and reads it back.
func TestGeneratedClientSendsAMessage(t *testing.T) {
	t.Parallel()
	e := setupClient(t)
	ctx := t.Context()
	ana := e.customer(t, "Ana", "+44 20 7946 0102")
	vars := map[string]string{"name": "Ana", "when": "Tuesday at 10:00"}
	r, err := e.c.SendMessageWithResponse(ctx, &apiclient.SendMessageParams{IdempotencyKey: "remind-1"}, apiclient.SendMessageInput{
		CustomerId: &ana, Channel: apiclient.SendMessageInputChannelSms, Template: "appointment_reminder", Variables: &vars,
	})
	msg, err := must(t, http.StatusCreated, r, err).JSON201.Result.AsMessage()
	if err != nil || msg.Recipient != "+442079460102" || msg.Status != apiclient.Queued || msg.SubjectLine != nil {
		t.Fatalf("message: %+v %v", msg, err)
	}
	g, err := e.c.GetMessageWithResponse(ctx, msg.Id)
	if got := must(t, http.StatusOK, g, err).JSON200; got.Body != msg.Body || got.Id != msg.Id {
		t.Fatalf("message read back: %+v", got)
	}
	if n := e.Count("SELECT count(*) FROM messages WHERE customer_id = $1 AND status = 'queued'", ana); n != 1 {
		t.Fatalf("messages = %d, want 1", n)
	}
}

// TestGeneratedClientChangesACustomer creates, updates (removing a field
// with null, sent as merge-patch), notes and rewards a customer with the
// generated client.
func TestGeneratedClientChangesACustomer(t *testing.T) {
	t.Parallel()
	e := setupClient(t)
	ctx := t.Context()
	email := "Ana@Example.com"
	cr, err := e.c.CreateCustomerWithResponse(ctx, &apiclient.CreateCustomerParams{IdempotencyKey: "customer-ana"},
		apiclient.CreateCustomerInput{Name: "Ana Lopez", Phone: ptr("+44 20 7946 0958"), Email: (*openapi_types.Email)(&email)})
	ana, err := must(t, http.StatusCreated, cr, err).JSON201.Result.AsCustomer()
	if err != nil || ana.Phone == nil || *ana.Phone != "+442079460958" || ana.Email == nil || *ana.Email != "ana@example.com" {
		t.Fatalf("create: %+v %v", ana, err)
	}

	ur, err := e.c.UpdateCustomerWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, ana.Id, &apiclient.UpdateCustomerParams{IdempotencyKey: "customer-ana-2"},
		apiclient.UpdateCustomerInput{Email: nullable.NewNullNullable[openapi_types.Email](), ExternalRef: nullable.NewNullableWithValue("crm-77")})
	updated, err := must(t, http.StatusOK, ur, err).JSON200.Result.AsCustomer()
	if err != nil || updated.Email != nil || updated.ExternalRef == nil || *updated.ExternalRef != "crm-77" || updated.Name != "Ana Lopez" {
		t.Fatalf("update: %+v %v", updated, err)
	}

	nr, err := e.c.AppendCustomerNoteWithResponse(ctx, ana.Id, &apiclient.AppendCustomerNoteParams{IdempotencyKey: "note-1"},
		apiclient.AppendCustomerNoteInput{Text: "Prefers morning appointments."})
	if note, err := must(t, http.StatusCreated, nr, err).JSON201.Result.AsNote(); err != nil || note.CustomerId != ana.Id {
		t.Fatalf("note: %+v %v", note, err)
	}
	for range 2 {
		pr, err := e.c.AddCustomerPointsWithResponse(ctx, ana.Id, &apiclient.AddCustomerPointsParams{IdempotencyKey: "points-1"},
			apiclient.AddCustomerPointsInput{Delta: 50, Reason: "visit 2030-01-02"})
		if entry, err := must(t, http.StatusCreated, pr, err).JSON201.Result.AsPointsEntry(); err != nil || entry.Balance != 50 {
			t.Fatalf("points: %+v %v", entry, err)
		}
	}
	pr, err := e.c.AddCustomerPointsWithResponse(ctx, ana.Id, &apiclient.AddCustomerPointsParams{IdempotencyKey: "points-2"},
		apiclient.AddCustomerPointsInput{Delta: -80, Reason: "reward"})
	if p := must(t, http.StatusUnprocessableEntity, pr, err).ApplicationproblemJSON422; p.Code != apiclient.INSUFFICIENTPOINTS || (*p.Details)["balance"] != float64(50) {
		t.Fatalf("redeeming too much: %+v", p)
	}

	g, err := e.c.GetCustomerWithResponse(ctx, ana.Id)
	if got := must(t, http.StatusOK, g, err).JSON200; got.Points != 50 || got.Email != nil {
		t.Fatalf("customer: %+v", got)
	}
	if n := e.Count("SELECT count(*) FROM customers WHERE id = $1 AND email IS NULL AND external_ref = 'crm-77' AND points = 50", ana.Id); n != 1 {
		t.Fatalf("customer row does not show the changes")
	}
	if n := e.Count("SELECT count(*) FROM customer_notes WHERE customer_id = $1", ana.Id); n != 1 {
		t.Fatalf("notes = %d, want 1", n)
	}
}

// TestGeneratedClientCallsDashaTools calls a tool by its URL and through the
// routing endpoint with the generated client.
func TestGeneratedClientCallsDashaTools(t *testing.T) {
	t.Parallel()
	e := setupClient(t)
	ctx := t.Context()
	ana, slot := e.customer(t, "Ana", ""), e.slot(t, 24*time.Hour)
	payload := func(tool string, args map[string]any) apiclient.DashaToolPayload {
		return apiclient.DashaToolPayload{
			Type: apiclient.ToolWebHookPayload, Status: ptr("Running"), CallId: ptr("call_abc123"), OrgId: ptr("org_123"),
			ToolName: &tool, Arguments: nullable.NewNullableWithValue(args),
		}
	}
	book := payload("book_appointment", map[string]any{"customer_id": ana, "slot_id": slot.Id})
	r, err := e.c.CallDashaToolByNameWithResponse(ctx, apiclient.BookAppointment, nil, book)
	ans := must(t, http.StatusOK, r, err).JSON200
	if ans.Outcome != apiclient.OutcomeConfirmed || ans.Reason != nil || ans.Details["slot_id"] != slot.Id.String() {
		t.Fatalf("book_appointment: %+v", ans)
	}
	r, err = e.c.CallDashaToolByNameWithResponse(ctx, apiclient.BookAppointment, nil, book)
	if retry := must(t, http.StatusOK, r, err); retry.Headers200.IdempotentReplayed == nil || !bytes.Equal(retry.Body, r.Body) {
		t.Fatalf("retry: %+v", retry.Headers200)
	}

	s, err := e.c.CallDashaToolWithResponse(ctx, nil, payload("check_action_status", map[string]any{"action_id": ans.ActionId}))
	if status := must(t, http.StatusOK, s, err).JSON200; status.Outcome != apiclient.OutcomeConfirmed || status.ActionId != ans.ActionId {
		t.Fatalf("check_action_status: %+v", status)
	}
	bad := payload("book_appointment", map[string]any{"customer_id": ana})
	r, err = e.c.CallDashaToolByNameWithResponse(ctx, apiclient.BookAppointment, nil, bad)
	if inv := must(t, http.StatusOK, r, err).JSON200; inv.Reason == nil || *inv.Reason != apiclient.InvalidArguments || inv.ActionId != "" {
		t.Fatalf("invalid arguments: %+v", inv)
	}
	if n := e.Count("SELECT count(*) FROM appointments WHERE slot_id = $1", slot.Id); n != 1 {
		t.Fatalf("appointments = %d, want 1", n)
	}
}

// TestGeneratedClientErrors reads probes and the documented error answers
// with the generated client.
func TestGeneratedClientErrors(t *testing.T) {
	t.Parallel()
	e := setupClient(t)
	ctx := t.Context()
	anon := newClient(t, e.Env, "")

	l, err := anon.GetLivenessWithResponse(ctx)
	if must(t, http.StatusOK, l, err).JSON200.Status != "ok" {
		t.Fatalf("livez: %s", l.Body)
	}
	rd, err := anon.GetReadinessWithResponse(ctx)
	if must(t, http.StatusOK, rd, err).JSON200.Status != "ok" {
		t.Fatalf("readyz: %s", rd.Body)
	}

	a, err := anon.GetActionWithResponse(ctx, uuid.New())
	if p := must(t, http.StatusUnauthorized, a, err).ApplicationproblemJSON401; p.Code != apiclient.UNAUTHORIZED || a.Headers401.WWWAuthenticate == "" {
		t.Fatalf("no key: %+v", p)
	}
	a, err = e.c.GetActionWithResponse(ctx, uuid.New())
	if p := must(t, http.StatusNotFound, a, err).ApplicationproblemJSON404; p.Code != apiclient.NOTFOUND {
		t.Fatalf("unknown action: %+v", p)
	}
	b, err := e.c.BookAppointmentWithResponse(ctx, &apiclient.BookAppointmentParams{IdempotencyKey: strings.Repeat("k", 256)},
		apiclient.BookAppointmentInput{CustomerId: uuid.New(), SlotId: uuid.New()})
	if p := must(t, http.StatusBadRequest, b, err).ApplicationproblemJSON400; p.Code != apiclient.IDEMPOTENCYKEYINVALID {
		t.Fatalf("long key: %+v", p)
	}
	s, err := e.c.ListSlotsWithResponse(ctx, &apiclient.ListSlotsParams{Limit: ptr(501)})
	if p := must(t, http.StatusBadRequest, s, err).ApplicationproblemJSON400; p.Code != apiclient.INVALIDINPUT || *p.Field != "limit" {
		t.Fatalf("limit 501: %+v", p)
	}
	// Without ONCECALL_OPERATOR_TOKEN the operator API does not exist.
	o, err := newClient(t, e.Env, "anything").ListOpsActionsWithResponse(ctx, nil)
	if p := must(t, http.StatusNotFound, o, err).ApplicationproblemJSON404; p.Code != apiclient.NOTFOUND {
		t.Fatalf("operator API without its token configured: %+v", p)
	}
	if n := e.Count("SELECT count(*) FROM actions"); n != 0 {
		t.Fatalf("actions = %d, want 0", n)
	}
}

func ptr[T any](v T) *T { return &v }
