package api

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A body bodyFirst read whole reaches the handler's readRaw as the bytes it
// read, not a copy; read in part first, readRaw gives the rest, as reading
// it would.
func TestBodyFirstHandsOnTheBodyItRead(t *testing.T) {
	t.Parallel()
	s := &Server{cfg: Config{BodyReadTimeout: time.Second}}
	for _, c := range []struct {
		name     string
		readOne  bool
		want     string
		sameByte bool
	}{
		{name: "whole", want: `{"slot_id":"s"}`, sameByte: true},
		{name: "read in part", readOne: true, want: `"slot_id":"s"}`},
	} {
		var got, again []byte
		var held *heldBody
		h := s.bodyFirst(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			held, _ = r.Body.(*heldBody)
			if c.readOne {
				if _, err := r.Body.Read(make([]byte, 1)); err != nil {
					t.Fatalf("%s: read one byte: %v", c.name, err)
				}
			}
			var err error
			if got, err = readRaw(r); err != nil {
				t.Fatalf("%s: readRaw: %v", c.name, err)
			}
			again, _ = io.ReadAll(r.Body)
		}))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"slot_id":"s"}`)))
		if held == nil {
			t.Fatalf("%s: the handler's body is not the held body", c.name)
		}
		if string(got) != c.want || len(again) != 0 {
			t.Errorf("%s: readRaw gave %q and left %q, want %q and nothing", c.name, got, again, c.want)
		}
		if same := &got[0] == &held.whole[0]; same != c.sameByte {
			t.Errorf("%s: readRaw's bytes are the held ones: %v, want %v", c.name, same, c.sameByte)
		}
	}
}
