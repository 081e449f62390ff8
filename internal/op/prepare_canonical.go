package op

// PrepareCanonical is Prepare for arguments that are already canonical
// JSON, the output of canon.Canonical or an object inside it (a tool call's
// arguments once its webhook's body is canonicalised): they are decoded as
// they are, not canonicalised again. Canonical form is idempotent, so the
// Prepared request, its fingerprint included, is the one Prepare makes of
// the same bytes. Anything else must go through Prepare: PrepareCanonical
// does not reject duplicate keys or invalid UTF-8 itself.
func (o spec[In]) PrepareCanonical(c []byte) (*Prepared, error) {
	var in In
	if err := decodeCanonical(c, &in); err != nil {
		return nil, err
	}
	return o.prepare(in)
}

// DecodeCanonical is Decode of arguments that are already canonical JSON
// (see PrepareCanonical): the strict decoding without a second
// canonicalisation.
func DecodeCanonical(c []byte, v any) error { return decodeCanonical(c, v) }
