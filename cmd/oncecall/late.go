package main

import (
	"net/url"
	"slices"
	"strings"
)

// lateResultHosts is the check of the control URLs late results may be
// posted to when --late-result-hosts names more hosts than Vapi's (a
// staging fake of Vapi's control URL): https on vapi.ai and its
// subdomains, or any URL on one of hosts. nil (Vapi's only) when hosts is
// empty.
func lateResultHosts(hosts string) func(*url.URL) bool {
	var allowed []string
	for h := range strings.SplitSeq(hosts, ",") {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			allowed = append(allowed, h)
		}
	}
	if len(allowed) == 0 {
		return nil
	}
	return func(u *url.URL) bool {
		host := strings.ToLower(u.Hostname())
		if u.Scheme == "https" && (host == "vapi.ai" || strings.HasSuffix(host, ".vapi.ai")) {
			return true
		}
		return (u.Scheme == "https" || u.Scheme == "http") && slices.Contains(allowed, host)
	}
}
