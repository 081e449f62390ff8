// Package wire holds the JSON shapes of oncecall's records as its HTTP API
// answers them and as operations store them as their answers: the field
// names, their order, omitempty and the time format are the contract of
// openapi.yaml, and stored answers are replayed byte for byte, so these
// structs change only with the contract.
//
// The domain types of package oncecall carry no tags; every writer of JSON
// (the api handlers, the operations' answers, the operator console) turns
// them into these shapes with the From... converters.
package wire

// list converts each element of in; nil stays nil (JSON null, or absent
// under omitempty) and an empty list stays empty (JSON []), as they were.
func list[D, W any](in []D, from func(D) W) []W {
	if in == nil {
		return nil
	}
	out := make([]W, len(in))
	for i, d := range in {
		out[i] = from(d)
	}
	return out
}
