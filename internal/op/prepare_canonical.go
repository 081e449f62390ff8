package op

import "github.com/oncecall/oncecall/internal/canon"

// PrepareCanonical is Prepare for arguments that are already canonical
// JSON, the output of canon.Canonical or an object inside it (a tool call's
// arguments once its webhook's body is canonicalised): they are decoded as
// they are, not canonicalised again. Canonical form is idempotent, so the
// Prepared request, its fingerprint included, is the one Prepare makes of
// the same bytes. Anything else must go through Prepare: PrepareCanonical
// does not reject duplicate keys or invalid UTF-8 itself.
func (o *spec[In]) PrepareCanonical(c []byte) (*Prepared, error) {
	p, _, err := o.PrepareCut(c, "")
	return p, err
}

// PrepareCut is PrepareCanonical of c without its top-level member named
// cut (a tool call's action_id), whose value it returns (nil without one),
// errors or not. An input of strings is checked and decoded in the one walk
// over c that finds the member (decodeMembers); any other input takes the
// general path.
func (o *spec[In]) PrepareCut(c []byte, cut string) (p *Prepared, cutValue []byte, err error) {
	var in In
	ok := false
	if len(c) > 0 && c[0] == '{' {
		cutValue, ok, err = decodeMembers(c, &in, "", cut, false)
	}
	if !ok {
		if cut != "" {
			cutValue, c, _ = canon.Cut(c, cut)
		}
		err = decodeCanonical(c, &in)
	}
	if err != nil {
		return nil, cutValue, err
	}
	p, err = o.prepare(in)
	return p, cutValue, err
}

// DecodeCanonical is Decode of arguments that are already canonical JSON
// (see PrepareCanonical): the strict decoding without a second
// canonicalisation.
func DecodeCanonical(c []byte, v any) error { return decodeCanonical(c, v) }
