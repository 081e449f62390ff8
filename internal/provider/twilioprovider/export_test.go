package twilioprovider

// SetPageSize makes p list Twilio's messages n at a time.
func SetPageSize(p *Provider, n int) { p.pageSize = n }
