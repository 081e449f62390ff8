package op

import "testing"

func TestSpokenAmount(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		minor    int64
		currency string
		want     string
	}{
		{4500, "EUR", "45.00 euros"},
		{5, "USD", "0.05 US dollars"},
		{123456789, "GBP", "1,234,567.89 pounds sterling"},
		{1000, "JPY", "1,000 yen"},
		{12500, "KWD", "12.500 KWD"},
		{99, "RON", "0.99 RON"},
	} {
		if got := SpokenAmount(c.minor, c.currency); got != c.want {
			t.Errorf("SpokenAmount(%d, %s) = %q, want %q", c.minor, c.currency, got, c.want)
		}
	}
}
