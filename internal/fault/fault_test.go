package fault_test

import (
	"errors"
	"testing"

	"github.com/oncecall/oncecall/internal/fault"
)

// TestCodeOfNil: no error has no code. A `switch fault.CodeOf(err)` whose
// success branch is `case "":` must reach it when err is nil.
func TestCodeOfNil(t *testing.T) {
	t.Parallel()
	if c := fault.CodeOf(nil); c != "" {
		t.Fatalf("fault.CodeOf(nil) = %q, want no code", c)
	}
	for _, tc := range []struct {
		err  error
		want fault.Code
	}{
		{fault.New(fault.NotFound, "x"), fault.NotFound},
		{errors.New("plain"), fault.Internal},
		{fault.Field("name", "is required"), fault.InvalidInput},
	} {
		if c := fault.CodeOf(tc.err); c != tc.want {
			t.Fatalf("fault.CodeOf(%v) = %q, want %q", tc.err, c, tc.want)
		}
	}
}
