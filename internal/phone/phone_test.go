package phone_test

import (
	"testing"

	"github.com/oncecall/oncecall/internal/phone"
)

func TestRegionOfAZone(t *testing.T) {
	t.Parallel()
	for zone, want := range map[string]string{
		"America/New_York": "US", "America/Chicago": "US", "Europe/London": "GB", "Europe/Dublin": "IE",
		"America/Toronto": "CA", "Asia/Kolkata": "IN", "Australia/Sydney": "AU", "UTC": "", "Nowhere/Else": "",
	} {
		if got := phone.Region(zone); got != want {
			t.Errorf("Region(%q) = %q, want %q", zone, got, want)
		}
	}
}

// What staff type finds the number oncecall stores, in their country's
// national forms and in international ones.
func TestParseAsStaffTypeIt(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, region, want string }{
		{"(212) 555-0142", "US", "+12125550142"},
		{"212-555-0199", "US", "+12125550199"},
		{"2125550199", "US", "+12125550199"},
		{"212.555.0199", "US", "+12125550199"},
		{"1 212 555 0199", "US", "+12125550199"},
		{"+1 212 555 0199", "US", "+12125550199"},
		{"+44 7700 900123", "US", "+447700900123"},
		{"447700900123", "US", "+447700900123"},
		{"011 44 7700 900123", "US", "+447700900123"},
		{"07700 900123", "GB", "+447700900123"},
		{"020 7946 0958", "GB", "+442079460958"},
		{"0044 20 7946 0958", "GB", "+442079460958"},
		{"+44 (0)20 7946 0958", "GB", "+442079460958"},
		{"+12125550142", "", "+12125550142"},
		{"447700900123", "", "+447700900123"},
		{"(212) 555-0142", "", ""}, // a national form needs the country
		{"maria", "US", ""},
		{"12", "US", ""},
		{"", "US", ""},
	} {
		got, ok := phone.Parse(c.in, c.region)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("Parse(%q, %q) = %q, %v; want %q", c.in, c.region, got, ok, c.want)
		}
	}
}

func TestDisplayInTheBusinesssCountry(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ e164, region, want string }{
		{"+12125550142", "US", "(212) 555-0142"},
		{"+447700900123", "GB", "07700 900123"},
		{"+447700900123", "US", "+44 7700 900123"},
		{"+12125550142", "GB", "+1 212-555-0142"},
		{"+12125550142", "", "+1 212-555-0142"},
		{"not a number", "US", "not a number"},
	} {
		if got := phone.Display(c.e164, c.region); got != c.want {
			t.Errorf("Display(%q, %q) = %q, want %q", c.e164, c.region, got, c.want)
		}
	}
}
