package dashatool

import "testing"

func TestSpokenCatalog(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ got, want string }{
		{Price(8000, "USD"), "80 US dollars"},
		{Price(1250, "EUR"), "12.50 euros"},
		{Price(0, "GBP"), "0 pounds sterling"},
		{Price(5000, "JPY"), "5,000 yen"},
		{minutes(45), "45 minutes"},
		{minutes(60), "1 hour"},
		{minutes(120), "2 hours"},
		{minutes(90), "90 minutes"},
		{list([]string{"a"}), "a"},
		{list([]string{"a", "b"}), "a and b"},
		{list([]string{"a", "b", "c"}), "a, b, and c"},
		{serial([]string{"a, 1", "b, 2"}), "a, 1, and b, 2"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
