package main

import (
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// unreachableBase says why a voice platform on the internet cannot call
// webhooks at baseURL: its host is this machine (localhost, a loopback
// address), a private or link-local network, or a name without a domain.
// Dasha rejects such webhook URLs; a local server needs a tunnel. Empty
// means the host looks public (it is not looked up).
func unreachableBase(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil {
		return ""
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "" {
		return ""
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		ip := net.IP(addr.Unmap().AsSlice())
		switch {
		case ip.IsLoopback():
			return host + " is a loopback address, this machine only"
		case ip.IsUnspecified():
			return host + " is the unspecified address, not one a caller can dial"
		case ip.IsPrivate() || addr.Unmap().Is4() && addr.Unmap().As4()[0] == 100 && addr.Unmap().As4()[1]&0xc0 == 64:
			return host + " is a private network address"
		case ip.IsLinkLocalUnicast():
			return host + " is a link-local address"
		}
		return ""
	}
	switch {
	case host == "localhost" || strings.HasSuffix(host, ".localhost"):
		return host + " is this machine"
	case strings.HasSuffix(host, ".local") || strings.HasSuffix(host, ".internal") ||
		strings.HasSuffix(host, ".lan") || strings.HasSuffix(host, ".home.arpa"):
		return host + " is a name of a local network"
	case !strings.Contains(host, "."):
		return host + " has no domain, so only a local network can resolve it"
	}
	return ""
}
