package console

import (
	"html/template"
	"strings"

	"github.com/oncecall/oncecall/internal/telemetry"
)

// TraceIDPlaceholder is what Config.TraceURL's pattern holds where the
// trace id goes.
const TraceIDPlaceholder = "{trace_id}"

// traceFuncs show an action's trace on its page: the trace id of the
// request that claimed it (kept when that request was traced, see
// telemetry.Keep), and a link to it when Config.TraceURL gives the trace
// viewer's pattern.
func (c *Console) traceFuncs() template.FuncMap {
	return template.FuncMap{
		"traceID": telemetry.TraceID,
		"traceURL": func(id string) string {
			if c.cfg.TraceURL == "" || id == "" {
				return ""
			}
			return strings.ReplaceAll(c.cfg.TraceURL, TraceIDPlaceholder, id)
		},
	}
}
