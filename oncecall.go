// Package oncecall holds oncecall's domain: the records the service keeps
// (actions and their steps, tenants, slots and appointments, customers,
// payment intents, messages, templates) as plain Go types, and the files of
// the repository root that the code needs (openapi.yaml).
//
// The domain types depend on the standard library and uuid only. They carry
// no struct tags: package db fills them from its rows and takes them as
// arguments, and each writer of JSON (wire for the HTTP answers and the
// stored answers of operations) has its own shapes, so the wire format never
// changes by accident when a field is added here.
package oncecall
