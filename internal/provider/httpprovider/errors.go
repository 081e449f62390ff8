package httpprovider

import (
	"context"
	"errors"
	"fmt"
	"net"
)

// Every error the client returns is one of these. They say what the
// caller may conclude about the write, not what went wrong on the wire.

// Rejected is a definitive business refusal (422, or a 400 for a malformed
// request): the provider did not perform the write and will not perform
// this request. A 422 is stored under the key, so a resend gets the same
// answer.
type Rejected struct {
	Status  int
	Code    string
	Message string
	// ID is the provider's reference of the stored rejection, when it has one.
	ID string
}

func (e *Rejected) Error() string {
	return fmt.Sprintf("provider rejected the write: %d %s: %s", e.Status, e.Code, e.Message)
}

// NotSent means the provider cannot have performed the request: the
// connection was refused or failed before any byte of it was written, or
// the provider refused it before looking at it (401, 403, 404 route, 405,
// 429). Sending it again, with the same key, is safe.
type NotSent struct {
	// Status is the HTTP status when the provider answered, 0 otherwise.
	Status int
	Code   string
	Err    error
}

func (e *NotSent) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("provider refused the request before processing it: %d %s", e.Status, e.Code)
	}
	return fmt.Sprintf("request not sent: %v", e.Err)
}

func (e *NotSent) Unwrap() error { return e.Err }

// Ambiguous means the write may or may not have happened: a timeout, a 5xx,
// a connection reset or closed after the request was sent, a 409 (the same
// key is in flight), or an answer that cannot be read. Only evidence (a
// resend with the same key inside the provider's key retention, or an
// authoritative lookup after its visibility delay) resolves it.
type Ambiguous struct {
	// Status is the HTTP status when the provider answered, 0 otherwise.
	Status int
	Code   string
	Err    error
}

func (e *Ambiguous) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("outcome unknown: %v", e.Err)
	}
	return fmt.Sprintf("outcome unknown: provider answered %d %s", e.Status, e.Code)
}

func (e *Ambiguous) Unwrap() error { return e.Err }

// Pending means the provider accepted the write and decides it later (an
// asynchronous confirmation, version 2): it is neither done nor refused
// yet, and lookups tell when it is decided. Sending it again with the same
// key is safe.
type Pending struct {
	// ID is the provider's reference of the write.
	ID string
}

func (e *Pending) Error() string { return "the provider accepted the write and decides it later" }

// Class names the kinds of error.
type Class int

// The classes; ClassNone is a nil error.
const (
	ClassNone Class = iota
	ClassRejected
	ClassNotSent
	ClassAmbiguous
	ClassPending
)

func (c Class) String() string {
	switch c {
	case ClassNone:
		return "none"
	case ClassRejected:
		return "rejected"
	case ClassNotSent:
		return "not_sent"
	case ClassPending:
		return "pending"
	}
	return "ambiguous"
}

// ClassOf returns the class of err. An error that is not one of the three
// (it never comes from this client) counts as ambiguous.
func ClassOf(err error) Class {
	if err == nil {
		return ClassNone
	}
	if _, ok := errors.AsType[*Rejected](err); ok {
		return ClassRejected
	}
	if _, ok := errors.AsType[*NotSent](err); ok {
		return ClassNotSent
	}
	if _, ok := errors.AsType[*Pending](err); ok {
		return ClassPending
	}
	return ClassAmbiguous
}

// transportError classifies an error of http.Client.Do. It is NotSent only
// on evidence that no byte of the request reached the connection: a dial or
// name-resolution failure, or a trace showing the transport looked for a
// connection but never wrote the request headers. Anything else is
// Ambiguous.
func transportError(err error, tr *sendTrace) error {
	if opErr, ok := errors.AsType[*net.OpError](err); ok && opErr.Op == "dial" {
		return &NotSent{Err: err}
	}
	if _, ok := errors.AsType[*net.DNSError](err); ok {
		return &NotSent{Err: err}
	}
	if tr.getConn.Load() && !tr.wroteHeaders.Load() {
		return &NotSent{Err: err}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Ambiguous{Err: fmt.Errorf("no answer in time: %w", err)}
	}
	return &Ambiguous{Err: err}
}
