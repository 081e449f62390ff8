package op

import (
	"encoding/json"
	"net/http"

	"github.com/oncecall/oncecall/internal/idem"
)

// Confirm is a confirmed result whose body is resource and whose resource id is id.
func Confirm(status int, id string, resource any) (idem.Result, error) {
	body, err := json.Marshal(resource)
	return idem.Result{Outcome: idem.Confirmed, Status: status, ResourceID: id, Body: body}, err
}

// Reject is a definitive rejection with a reason code and details for the
// caller (ids, never customer data).
func Reject(reason string, details any) (idem.Result, error) {
	body, err := json.Marshal(details)
	return idem.Result{Outcome: idem.Rejected, Status: http.StatusUnprocessableEntity, Reason: reason, Body: body}, err
}

// First returns the first non-nil error; Normalize functions use it to check
// fields in order.
func First(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
