package provider_test

import (
	"testing"

	"github.com/oncecall/oncecall/internal/provider"
)

type unnamed struct{ provider.Provider }

// A provider's identity is stored with every step: the http provider is
// named by its base URL without credentials, query or a final slash, in one
// spelling; a provider that does not name itself by its Go type.
func TestIdentityNamesTheProviderWithoutSecrets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ base, want string }{
		{"https://cal.example/api/", "https://cal.example/api"},
		{"HTTPS://user:secret@Cal.Example/api?token=abc#x", "https://cal.example/api"},
		{"http://127.0.0.1:8090", "http://127.0.0.1:8090"},
	} {
		got := provider.IdentityOf(provider.NewHTTP(provider.HTTPConfig{BaseURL: tc.base, Token: "tok"}))
		if got != (provider.Identity{Kind: "http", Account: tc.want}) {
			t.Errorf("identity of %q = %+v, want http %q", tc.base, got, tc.want)
		}
	}
	if got := provider.IdentityOf(unnamed{}); got.Kind != "provider_test.unnamed" || got.Account != "" {
		t.Errorf("identity of an unnamed provider = %+v, want its type", got)
	}
}
