package message

import (
	"context"
	"net/http"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/provider"
)

// remoteSend is what a remote messaging provider receives for message.send:
// the request and the text it rendered to when the action was claimed, with
// the template version used. The step keeps it, so every dispatch and every
// recovery sends exactly this text, whatever the template says later.
type remoteSend struct {
	SendInput
	TemplateVersion int    `json:"template_version,omitempty"`
	SubjectLine     string `json:"subject_line,omitempty"`
	Body            string `json:"body"`
}

// sendRemote sends through the messaging provider. The payload is rendered
// in the claim's transaction, where the tenant's template is read.
func sendRemote() *op.Remote[SendInput] {
	r := op.SendInput[SendInput](provider.Messaging, http.StatusCreated)
	r.Reserve = func(ctx context.Context, tx *db.Tx, x idem.Exec, in SendInput) (op.Reservation, error) {
		text, err := render(ctx, tx, x.TenantID, in)
		if err != nil {
			return op.Reservation{}, err
		}
		return op.Reservation{Payload: remoteSend{SendInput: in, TemplateVersion: text.version, SubjectLine: text.subject, Body: text.body}}, nil
	}
	return r
}

// maxEchoedName bounds how much of an unknown variable's name an error
// repeats.
const maxEchoedName = 40

func shortName(name string) string { return op.Shorten(name, maxEchoedName) }
