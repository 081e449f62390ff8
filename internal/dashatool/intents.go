package dashatool

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/op"
)

// ListPaymentIntents is the read-only tool that lists a customer's open
// payment intents: how an agent finds the payment_intent_id charge_payment
// needs (intents are approved by the business, through REST).
const ListPaymentIntents = "list_payment_intents"

// IntentsInput is the arguments of list_payment_intents.
type IntentsInput struct {
	CustomerID string `json:"customer_id" required:"true" format:"uuid" desc:"The customer's id, from find_customer."`
	Limit      *int   `json:"limit" minimum:"1" maximum:"20" desc:"Optional: how many payment intents to list, 1 to 20 (default 10)."`
}

// DefaultIntents is how many intents list_payment_intents lists by default.
const DefaultIntents = 10

// Normalize validates the input.
func (in *IntentsInput) Normalize() error {
	if err := op.ID("customer_id", &in.CustomerID); err != nil {
		return err
	}
	if in.Limit != nil && (*in.Limit < 1 || *in.Limit > 20) {
		return fault.Field("limit", "must be an integer from 1 to 20")
	}
	return nil
}

// N is how many intents to list.
func (in IntentsInput) N() int {
	if in.Limit == nil {
		return DefaultIntents
	}
	return *in.Limit
}

// IntentView is what a voice agent learns of an open payment intent.
type IntentView struct {
	PaymentIntentID string `json:"payment_intent_id"`
	Amount          int64  `json:"amount"`
	Currency        string `json:"currency"`
	// AmountSpoken says the amount as a person does: "45.00 euros".
	AmountSpoken string    `json:"amount_spoken"`
	Description  string    `json:"description"`
	CreatedAt    time.Time `json:"created_at"`
	// ChargeInProgress: a charge of it is waiting for the payments
	// provider's outcome; it must not be charged again meanwhile.
	ChargeInProgress bool `json:"charge_in_progress"`
}

// IntentViewOf is the view of an intent.
func IntentViewOf(pi oncecall.PaymentIntent) IntentView {
	return IntentView{
		PaymentIntentID: pi.ID.String(), Amount: pi.Amount, Currency: pi.Currency,
		AmountSpoken: op.SpokenAmount(pi.Amount, pi.Currency), Description: pi.Description, CreatedAt: pi.CreatedAt,
		ChargeInProgress: pi.ChargingAction != uuid.Nil,
	}
}

// IntentsAnswer answers list_payment_intents.
func IntentsAnswer(customerID string, found []IntentView) Answer {
	if found == nil {
		found = []IntentView{}
	}
	details, _ := json.Marshal(map[string]any{"customer_id": customerID, "payment_intents": found})
	say := "The customer has no approved payment waiting to be charged. Do not charge anything; if the caller expected " +
		"to pay, tell them the business will send the payment request and that someone will follow up."
	if len(found) > 0 {
		say = "These are the customer's approved payments not charged yet, newest first. Confirm with the caller which one " +
			"they are paying (by its description and amount_spoken), then call charge_payment with its payment_intent_id. " +
			"One with charge_in_progress true is already being charged: do not charge it again. Never invent an id."
	}
	return Answer{Outcome: string(oncecall.Confirmed), Say: say, Details: details}
}
