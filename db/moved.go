package db

import "github.com/oncecall/oncecall"

// The domain types moved to package oncecall. These aliases keep callers
// building until they name oncecall themselves; nothing new may use them.
type (
	Action        = oncecall.Action
	State         = oncecall.State
	Outcome       = oncecall.Outcome
	Tenant        = oncecall.Tenant
	Scope         = oncecall.Scope
	Slot          = oncecall.Slot
	Appointment   = oncecall.Appointment
	Customer      = oncecall.Customer
	Note          = oncecall.Note
	PointsEntry   = oncecall.PointsEntry
	Message       = oncecall.Message
	PaymentIntent = oncecall.PaymentIntent
	Payment       = oncecall.Payment
	Step          = oncecall.Step
	Event         = oncecall.Event
	Template      = oncecall.Template
)

// Constants and functions that moved with them.
const (
	Running               = oncecall.Running
	Completed             = oncecall.Completed
	Unknown               = oncecall.Unknown
	Confirmed             = oncecall.Confirmed
	Rejected              = oncecall.Rejected
	Pending               = oncecall.Pending
	ScopeFull             = oncecall.ScopeFull
	ScopeDasha            = oncecall.ScopeDasha
	IntentRequiresCapture = oncecall.IntentRequiresCapture
	IntentCaptured        = oncecall.IntentCaptured
	PaymentSucceeded      = oncecall.PaymentSucceeded
	PaymentDeclined       = oncecall.PaymentDeclined
	StepPending           = oncecall.StepPending
	StepUnknown           = oncecall.StepUnknown
	StepSucceeded         = oncecall.StepSucceeded
	StepRejected          = oncecall.StepRejected
)

// ParseScope is oncecall.ParseScope.
var ParseScope = oncecall.ParseScope
