// Package fault is oncecall's one error vocabulary: a stable code and a
// message that is safe to show to a client. Code.HTTPStatus maps codes to
// HTTP statuses in one place (the api package's problem+json and the
// operator console's pages); everything else only returns these errors.
package fault

import (
	"errors"
	"fmt"
	"net/http"
)

// Code is a stable, documented error code (the problem+json `code` member).
type Code string

// Codes that describe a request rather than an action's outcome.
const (
	KeyMissing       Code = "IDEMPOTENCY_KEY_MISSING"
	KeyInvalid       Code = "IDEMPOTENCY_KEY_INVALID"
	KeyReused        Code = "IDEMPOTENCY_KEY_REUSED"
	InProgress       Code = "IDEMPOTENCY_IN_PROGRESS"
	InFlight         Code = "ACTION_IN_FLIGHT"
	InvalidJSON      Code = "INVALID_JSON"
	InvalidInput     Code = "INVALID_INPUT"
	Unauthorized     Code = "UNAUTHORIZED"
	Forbidden        Code = "FORBIDDEN"
	NotFound         Code = "NOT_FOUND"
	MethodNotAllowed Code = "METHOD_NOT_ALLOWED"
	PayloadTooLarge  Code = "PAYLOAD_TOO_LARGE"
	UnsupportedMedia Code = "UNSUPPORTED_MEDIA_TYPE"
	RateLimited      Code = "RATE_LIMITED"
	Unavailable      Code = "SERVICE_UNAVAILABLE"
	Internal         Code = "INTERNAL"
)

// Error is an error a client may see. Message never contains customer data
// or internal detail.
type Error struct {
	Code    Code
	Message string
	// Field names the offending input field for INVALID_INPUT.
	Field string
	// Err is the underlying cause; it is logged, never shown.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an Error with a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Field returns an INVALID_INPUT error about one input field.
func Field(field, format string, args ...any) *Error {
	return &Error{Code: InvalidInput, Field: field, Message: field + " " + fmt.Sprintf(format, args...)}
}

// Wrap returns an Error with code and message that keeps err as its cause.
func Wrap(code Code, err error, message string) *Error {
	return &Error{Code: code, Message: message, Err: err}
}

// unavailable is a failure of a service the request needed, which could
// not do the work (the database: db.UnavailableError, made by db.Fault);
// Unavailable is what the client hears. Storage says what a failure means
// without knowing the codes; As is the one place it gets its code.
type unavailable interface {
	error
	Unavailable() string
}

// As returns the *Error in err's chain; else SERVICE_UNAVAILABLE for a
// service that was unavailable; else an INTERNAL error wrapping err.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var u unavailable
	if errors.As(err, &u) {
		return &Error{Code: Unavailable, Message: u.Unavailable(), Err: err}
	}
	return &Error{Code: Internal, Message: "internal error", Err: err}
}

// CodeOf returns the code of err: none ("") when err is nil, INTERNAL
// when err is not an *Error (nor a service's unavailability). A switch on
// it reaches `case "":` on success.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	return As(err).Code
}

// HTTPStatus is the one mapping from error codes to HTTP statuses: the API's
// problem+json and the operator console's pages answer with it.
func (c Code) HTTPStatus() int {
	switch c {
	case KeyMissing, KeyInvalid, InvalidJSON, InvalidInput:
		return http.StatusBadRequest
	case Unauthorized:
		return http.StatusUnauthorized
	case Forbidden:
		return http.StatusForbidden
	case NotFound:
		return http.StatusNotFound
	case MethodNotAllowed:
		return http.StatusMethodNotAllowed
	case InProgress, InFlight:
		return http.StatusConflict
	case PayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case UnsupportedMedia:
		return http.StatusUnsupportedMediaType
	case KeyReused:
		return http.StatusUnprocessableEntity
	case RateLimited:
		return http.StatusTooManyRequests
	case Unavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}
