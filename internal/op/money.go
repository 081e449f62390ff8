package op

import (
	"fmt"
	"strings"
)

// minorDigits are the ISO 4217 minor-unit exponents that are not 2.
var minorDigits = map[string]int{
	"BIF": 0, "CLP": 0, "DJF": 0, "GNF": 0, "ISK": 0, "JPY": 0, "KMF": 0, "KRW": 0, "PYG": 0, "RWF": 0,
	"UGX": 0, "VND": 0, "VUV": 0, "XAF": 0, "XOF": 0, "XPF": 0,
	"BHD": 3, "IQD": 3, "JOD": 3, "KWD": 3, "LYD": 3, "OMR": 3, "TND": 3,
}

// currencyNames are how the most common currencies are said, in the plural;
// any other is said by its code.
var currencyNames = map[string]string{
	"AUD": "Australian dollars", "CAD": "Canadian dollars", "CHF": "Swiss francs", "CZK": "Czech korunas",
	"DKK": "Danish kroner", "EUR": "euros", "GBP": "pounds sterling", "HKD": "Hong Kong dollars", "INR": "Indian rupees",
	"JPY": "yen", "MXN": "Mexican pesos", "NOK": "Norwegian kroner", "NZD": "New Zealand dollars", "PLN": "zloty",
	"SEK": "Swedish kronor", "SGD": "Singapore dollars", "USD": "US dollars", "ZAR": "rand",
}

// SpokenAmount says an amount in minor units of an ISO 4217 currency as a
// voice agent reads it out: "45.00 euros", "1,000 yen", "12.500 KWD".
func SpokenAmount(minor int64, currency string) string {
	digits, ok := minorDigits[currency]
	if !ok {
		digits = 2
	}
	sign := ""
	if minor < 0 {
		sign, minor = "-", -minor
	}
	unit := int64(1)
	for range digits {
		unit *= 10
	}
	whole := group(minor / unit)
	if digits > 0 {
		whole += fmt.Sprintf(".%0*d", digits, minor%unit)
	}
	name, ok := currencyNames[currency]
	if !ok {
		name = currency
	}
	return sign + whole + " " + name
}

// group writes n with thousands separators.
func group(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// MinorUnit is how many minor units make one unit of an ISO 4217 currency
// (100 for most, 1 for yen, 1000 for dinars).
func MinorUnit(currency string) int64 {
	digits, ok := minorDigits[currency]
	if !ok {
		digits = 2
	}
	unit := int64(1)
	for range digits {
		unit *= 10
	}
	return unit
}

// DecimalAmount writes an amount in minor units as a plain decimal of the
// currency's units: "45.00", "1000", "12.500".
func DecimalAmount(minor int64, currency string) string {
	unit := MinorUnit(currency)
	sign := ""
	if minor < 0 {
		sign, minor = "-", -minor
	}
	if unit == 1 {
		return fmt.Sprintf("%s%d", sign, minor)
	}
	digits := len(fmt.Sprint(unit)) - 1
	return fmt.Sprintf("%s%d.%0*d", sign, minor/unit, digits, minor%unit)
}
