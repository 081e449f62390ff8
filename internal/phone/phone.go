// Package phone reads, stores and shows phone numbers the way the people at
// a business use them, with libphonenumber's Go port
// (github.com/nyaruka/phonenumbers): what staff type in their own country's
// national form ("(212) 555-0142" in New York, "07700 900123" in London) or
// in international form is read as one E.164 number, the form oncecall
// stores; a number of the business's own country is shown in its national
// format, any other in the international one. A business's country is its
// timezone's (the tz database's zone.tab).
package phone

import (
	"bufio"
	_ "embed"
	"strings"
	"sync"

	"github.com/nyaruka/phonenumbers"
)

//go:embed zones.tab
var zonesTab string

var zones = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(zonesTab))
	for sc.Scan() {
		if country, zone, ok := strings.Cut(sc.Text(), "\t"); ok && !strings.HasPrefix(country, "#") {
			m[zone] = country
		}
	}
	return m
})

// Region is the country (ISO 3166-1 alpha-2, "US", "GB") of an IANA
// timezone; "" for a zone of no one country (UTC).
func Region(zone string) string {
	return zones()[zone]
}

// Parse reads a number as a person types it, in region: a national form
// ("(212) 555-0142", "212-555-0199", "07700 900123"), an international
// one ("+44 7700 900123", "0044 7700 900123"), or the digits of an
// international number without its + ("447700900123"). It returns the
// number in E.164, and false when it is not one any country could have.
// Without a region only international forms are read.
func Parse(s, region string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 40 {
		return "", false
	}
	var tries []*phonenumbers.PhoneNumber
	if region != "" {
		if n, err := phonenumbers.Parse(s, region); err == nil {
			tries = append(tries, n)
		}
	}
	if digits := phonenumbers.NormalizeDigitsOnly(s); !strings.HasPrefix(s, "+") && digits != "" && onlyNumberChars(s) {
		if n, err := phonenumbers.Parse("+"+strings.TrimPrefix(digits, "00"), ""); err == nil {
			tries = append(tries, n)
		}
	}
	if strings.HasPrefix(s, "+") {
		if n, err := phonenumbers.Parse(s, ""); err == nil {
			tries = append(tries, n)
		}
	}
	// A valid number first (the country's numbering plan knows it), then
	// one of a possible length (numbers kept for fiction, new ranges).
	for _, check := range []func(*phonenumbers.PhoneNumber) bool{phonenumbers.IsValidNumber, whole} {
		for _, n := range tries {
			if check(n) {
				return phonenumbers.Format(n, phonenumbers.E164), true
			}
		}
	}
	return "", false
}

// onlyNumberChars reports whether s is written with digits and the
// separators people put between them only.
func onlyNumberChars(s string) bool {
	for _, r := range s {
		if (r < '0' || r > '9') && !strings.ContainsRune(" .-()/", r) {
			return false
		}
	}
	return true
}

// Display is an E.164 number as a person in region reads it: the national
// format for a number of region's country ("(212) 555-0142"), the
// international one for any other ("+44 7700 900123"). A number it cannot
// read is shown as it is.
func Display(e164, region string) string {
	n, err := phonenumbers.Parse(e164, "")
	if err != nil {
		return e164
	}
	if region != "" && int(n.GetCountryCode()) == phonenumbers.GetCountryCodeForRegion(region) {
		return phonenumbers.Format(n, phonenumbers.NATIONAL)
	}
	return phonenumbers.Format(n, phonenumbers.INTERNATIONAL)
}

// International reads a number written in international form (a leading +,
// or 00) as E.164: the form every tool and API field takes, which names its
// country. ok is false when it is not a number any country could have (an
// unknown country code, or a length its country never uses).
func International(s string) (string, bool) {
	n, err := phonenumbers.Parse(s, "")
	if err != nil || !whole(n) {
		return "", false
	}
	return phonenumbers.Format(n, phonenumbers.E164), true
}

// whole reports whether n has a length its country uses for a number
// dialled from elsewhere: not a local number without its area code.
func whole(n *phonenumbers.PhoneNumber) bool {
	return phonenumbers.IsPossibleNumberWithReason(n) == phonenumbers.IS_POSSIBLE
}
