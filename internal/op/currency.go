package op

import "strings"

// currencies are the ISO 4217 alphabetic codes of currencies in circulation
// (legal tender), as of the 2026 list. Fund codes (BOV, CHE, CLF, ...),
// precious metals, special drawing rights, the test code and XXX are left
// out: nobody is charged in them. Withdrawn codes are gone too: HRK (2023),
// SLL (2024), ZWL (2024), ANG (2025), BGN (2026).
const currencies = "" +
	"AED AFN ALL AMD AOA ARS AUD AWG AZN BAM BBD BDT BHD BIF BMD BND BOB BRL BSD BTN " +
	"BWP BYN BZD CAD CDF CHF CLP CNY COP CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB " +
	"EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR " +
	"ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD " +
	"MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD OMR " +
	"PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE " +
	"SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD UYU " +
	"UZS VED VES VND VUV WST XAF XCD XCG XOF XPF YER ZAR ZMW ZWG"

// IsCurrency reports whether code is an active ISO 4217 code (upper-case).
func IsCurrency(code string) bool {
	if len(code) != 3 {
		return false
	}
	for i := range len(code) {
		if code[i] < 'A' || code[i] > 'Z' {
			return false
		}
	}
	// Three letters without a space can only match one whole code.
	return strings.Contains(currencies, code)
}
