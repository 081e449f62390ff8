package console

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// cookieName is the session cookie; it lives under /console/ only.
const cookieName = "oncecall_console"

// session is a signed-in operator: the name they gave, recorded as "by" on
// their resolutions, and when the session ends.
type session struct {
	Name    string
	Expires time.Time
}

// sessionKey derives the cookie's HMAC key from the operator token: a
// changed token ends every session, and every replica with the same token
// accepts the same cookies without shared state.
func sessionKey(token string) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("oncecall console session v1"))
	return m.Sum(nil)
}

func (c *Console) sign(payload string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// encode is name.expiry.mac, the name base64url-encoded.
func (c *Console) encode(s session) string {
	payload := base64.RawURLEncoding.EncodeToString([]byte(s.Name)) + "." + strconv.FormatInt(s.Expires.Unix(), 10)
	return payload + "." + c.sign(payload)
}

// decode checks a cookie value's signature and expiry.
func (c *Console) decode(v string, now time.Time) (session, bool) {
	i := strings.LastIndexByte(v, '.')
	if i < 0 {
		return session{}, false
	}
	payload, mac := v[:i], v[i+1:]
	if !hmac.Equal([]byte(mac), []byte(c.sign(payload))) {
		return session{}, false
	}
	name64, exp, ok := strings.Cut(payload, ".")
	if !ok {
		return session{}, false
	}
	unix, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || !now.Before(time.Unix(unix, 0)) {
		return session{}, false
	}
	name, err := base64.RawURLEncoding.DecodeString(name64)
	if err != nil || validName(string(name)) != "" {
		return session{}, false
	}
	return session{Name: string(name), Expires: time.Unix(unix, 0)}, true
}

// current is the request's session, if it has a valid one.
func (c *Console) current(r *http.Request) (session, bool) {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return session{}, false
	}
	return c.decode(ck.Value, c.now())
}

// secure reports whether the browser reached the console over TLS, directly
// or through a proxy that says so.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

func (c *Console) setSession(w http.ResponseWriter, r *http.Request, s session) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: c.encode(s), Path: "/console/", Expires: s.Expires,
		MaxAge: int(time.Until(s.Expires).Seconds()), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure(r),
	})
}

func clearSession(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: "", Path: "/console/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure(r),
	})
}

// validName checks an operator's name: 1 to 64 printable characters. It
// returns what is wrong, or "".
func validName(name string) string {
	if name == "" || utf8.RuneCountInString(name) > 64 || !utf8.ValidString(name) {
		return "your name must be 1 to 64 characters"
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return "your name must be printable characters"
		}
	}
	return ""
}
