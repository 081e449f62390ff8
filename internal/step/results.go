package step

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/oncecall/oncecall"
)

// resultRef is a reference, inside a step's payload, to what an earlier
// step of the same action gave back: {{step:<name>.<field>}}, e.g.
// {{step:payment_links.session.url}} in the text of the SMS that carries a
// payment link. The step name may hold dots; the field is the last part.
var resultRef = regexp.MustCompile(`\{\{step:([a-z_.]+)\.([a-z_]+)\}\}`)

// withResults fills the result references of payload from the results of
// the earlier steps of its action, which have succeeded (a step is sent only
// after the writes before it). The payload is recorded with its references,
// and every send and lookup fills them the same way: an earlier step's
// result never changes once it succeeded. A reference nothing answers is
// an error: the step is not sent.
func withResults(payload []byte, earlier []oncecall.Step) ([]byte, error) {
	if !bytes.Contains(payload, []byte("{{step:")) {
		return payload, nil
	}
	var missing error
	out := resultRef.ReplaceAllFunc(payload, func(m []byte) []byte {
		sub := resultRef.FindSubmatch(m)
		name, field := string(sub[1]), string(sub[2])
		for _, s := range earlier {
			if s.Name != name || s.State != oncecall.StepSucceeded {
				continue
			}
			if v, ok := s.Result[field]; ok {
				// The value goes inside a JSON string: escaped, unquoted.
				b, _ := json.Marshal(v)
				return b[1 : len(b)-1]
			}
		}
		missing = fmt.Errorf("its payload uses %s of step %s, which has not given it", field, name)
		return m
	})
	return out, missing
}
