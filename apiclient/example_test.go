package apiclient_test

import (
	"context"
	"fmt"
	"log"
	"net/http"

	"github.com/oncecall/oncecall/apiclient"
)

// Book an appointment with retries that cannot book twice: the client sends
// through apiclient.Retry, and the Idempotency-Key is made once for the
// booking, so a retry after a lost answer receives the stored answer.
func Example() {
	// An oncecall for this example; your program has its URL and a tenant's
	// API key, and the customer and slot ids from earlier calls.
	base, key, customer, slot, stop := exampleOncecall()
	defer stop()

	client, err := apiclient.NewClientWithResponses(base,
		apiclient.WithHTTPClient(&apiclient.Retry{}),
		apiclient.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+key)
			return nil
		}))
	if err != nil {
		log.Fatal(err)
	}
	// One key per intended action, made before the first attempt.
	params := &apiclient.BookAppointmentParams{IdempotencyKey: "book-42-731"}
	body := apiclient.BookAppointmentJSONRequestBody{CustomerId: customer, SlotId: slot}
	for range 2 { // the second call stands for your own retry: the same key, the same booking
		r, err := client.BookAppointmentWithResponse(context.Background(), params, body)
		if err != nil {
			log.Fatal(err)
		}
		if r.JSON201 == nil {
			log.Fatalf("not booked: %d %s", r.StatusCode(), r.Body)
		}
		fmt.Println(r.StatusCode(), r.JSON201.Outcome, "replayed:", r.HTTPResponse.Header.Get("Idempotent-Replayed") == "true")
	}
	// Output:
	// 201 confirmed replayed: false
	// 201 confirmed replayed: true
}
