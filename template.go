package oncecall

import "time"

// Template is one version of a tenant's message template, as declared.
type Template struct {
	Name    string
	Version int
	// Subject is the e-mail subject line's template; empty when the template
	// cannot be sent by e-mail.
	Subject string
	Body    string
	// Required and Optional name the template's variables.
	Required  []string
	Optional  []string
	CreatedAt time.Time
}
