package console_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/staff"
)

// idp is a small OpenID Connect provider for tests: discovery, JWKS, an
// authorization endpoint that signs in whoever it is told to (no login
// page), and a token endpoint that checks the client's secret, the code
// and its PKCE verifier, and answers an RS256 ID token.
type idp struct {
	*httptest.Server
	key *rsa.PrivateKey

	mu    sync.Mutex
	next  map[string]any // the claims of the next sign-in
	codes map[string]grant
}

type grant struct {
	claims                       map[string]any
	nonce, challenge, redirectTo string
}

const (
	idpClient = "oncecall-console"
	idpSecret = "client-secret-for-the-test"
)

func startIDP(t *testing.T) *idp {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := &idp{key: key, codes: map[string]grant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{ //nolint:errcheck // the test fails on a bad answer
			"issuer": p.URL, "authorization_endpoint": p.URL + "/authorize", "token_endpoint": p.URL + "/token",
			"jwks_uri": p.URL + "/jwks", "response_types_supported": []string{"code"},
			"subject_types_supported": []string{"public"}, "id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{ //nolint:errcheck // as above
			{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"},
		}})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		p.mu.Lock()
		claims := p.next
		code := uuid.NewString()
		if q.Get("client_id") != idpClient || q.Get("code_challenge_method") != "S256" || claims == nil {
			p.mu.Unlock()
			http.Error(w, "bad authorization request", http.StatusBadRequest)
			return
		}
		p.codes[code] = grant{claims: claims, nonce: q.Get("nonce"), challenge: q.Get("code_challenge"), redirectTo: q.Get("redirect_uri")}
		p.mu.Unlock()
		back, _ := url.Parse(q.Get("redirect_uri"))
		v := back.Query()
		v.Set("code", code)
		v.Set("state", q.Get("state"))
		back.RawQuery = v.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if !ok {
			id, secret = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
		}
		p.mu.Lock()
		g, found := p.codes[r.PostFormValue("code")]
		delete(p.codes, r.PostFormValue("code"))
		p.mu.Unlock()
		sum := sha256.Sum256([]byte(r.PostFormValue("code_verifier")))
		if id != idpClient || secret != idpSecret || !found || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge ||
			r.PostFormValue("redirect_uri") != g.redirectTo {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"invalid_grant"}`)) //nolint:errcheck // as above
			return
		}
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
			(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		claims := map[string]any{"iss": p.URL, "aud": idpClient, "sub": uuid.NewString(), "nonce": g.nonce,
			"iat": time.Now().Unix(), "exp": time.Now().Add(5 * time.Minute).Unix()}
		for k, v := range g.claims {
			claims[k] = v
		}
		raw, err := jwt.Signed(signer).Claims(claims).Serialize()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{ //nolint:errcheck // as above
			"access_token": "at-" + uuid.NewString(), "token_type": "Bearer", "expires_in": 300, "id_token": raw,
		})
	})
	p.Server = httptest.NewServer(mux)
	t.Cleanup(p.Close)
	return p
}

// signsIn makes the next sign-in at the provider that of these claims.
func (p *idp) signsIn(claims map[string]any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next = claims
}

// freeAddr is an address on the loopback to listen on: the console's
// redirect URL must name it before oncecall starts.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func withOIDC(p *idp, addr string) func(*app.Config) {
	return func(c *app.Config) {
		c.Addr = addr
		c.Console.OIDC = staff.OIDCConfig{
			Issuer: p.URL, ClientID: idpClient, ClientSecret: idpSecret, Name: "Clinic SSO",
			RedirectURL: "http://" + addr + "/console/oidc/callback",
		}
	}
}

// A person of the staff signs in through the clinic's identity provider;
// someone the provider vouches for who is not on the staff, an address
// the provider has not verified, and a callback this browser did not
// start are refused, with no session.
func TestSignInThroughTheIdentityProvider(t *testing.T) {
	t.Parallel()
	p := startIDP(t)
	addr := freeAddr(t)
	s := startStackWith(t, "SSO Clinic", time.Hour, withOIDC(p, addr))
	s.person(t, "Nia Nurse", "nia@clinic.example", oncecall.RoleViewer, uuid.Nil)

	login := func(claims map[string]any) (*http.Client, answer) {
		t.Helper()
		p.signsIn(claims)
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if strings.HasPrefix(req.URL.Path, "/console/oidc/callback") {
				return nil
			}
			if strings.HasPrefix(req.URL.String(), p.URL) {
				return nil
			}
			return http.ErrUseLastResponse
		}}
		return c, send(t, c, http.MethodGet, s.e.URL+"/console/oidc/start", nil)
	}
	if a := send(t, noRedirect(), http.MethodGet, s.e.URL+"/console/signin", nil); !strings.Contains(a.body, "Sign in with Clinic SSO") {
		t.Fatal("the sign-in page does not offer the identity provider")
	}
	c, a := login(map[string]any{"email": "NIA@clinic.example", "email_verified": true})
	if a.status != http.StatusOK || !strings.Contains(a.body, `http-equiv="refresh"`) {
		t.Fatalf("callback: %d\n%s", a.status, a.body)
	}
	if q := send(t, c, http.MethodGet, s.e.URL+"/console/", nil); q.status != http.StatusOK || !strings.Contains(q.body, `<b id="who">Nia Nurse</b>`) {
		t.Fatalf("after signing in through the provider: %d", q.status)
	}
	if n := s.e.Count(`SELECT count(*) FROM operator_audit WHERE kind = 'signed_in' AND via = 'oidc' AND operator_name = 'Nia Nurse'`); n != 1 {
		t.Fatal("the sign-in is not audited")
	}
	for name, claims := range map[string]map[string]any{
		"not on the staff": {"email": "mallory@clinic.example", "email_verified": true},
		"not verified":     {"email": "nia@clinic.example", "email_verified": false},
		"no verification":  {"email": "nia@clinic.example"},
	} {
		_, a := login(claims)
		if a.status < 400 || strings.Contains(a.header.Get("Set-Cookie"), "oncecall_console=") {
			t.Fatalf("%s: %d %v", name, a.status, a.header)
		}
	}
	// A callback with a state this browser did not start.
	a = send(t, noRedirect(), http.MethodGet, s.e.URL+"/console/oidc/callback?code=x&state=forged", nil)
	if a.status != http.StatusBadRequest || strings.Contains(a.header.Get("Set-Cookie"), "oncecall_console=") {
		t.Fatalf("a forged callback: %d", a.status)
	}
	if n := s.e.Count(`SELECT count(*) FROM operator_sessions`); n != 1 {
		t.Fatalf("%d sessions, want the one sign-in", n)
	}
}
