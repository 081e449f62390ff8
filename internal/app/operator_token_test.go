package app_test

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// An operator token shorter than 32 characters stops Start with a message
// naming the setting; 32 characters start.
func TestStartRefusesAShortOperatorToken(t *testing.T) {
	t.Parallel()
	for token, ok := range map[string]bool{"abc": false, strings.Repeat("x", 31): false, strings.Repeat("x", 32): true} {
		m, err := app.Start(t.Context(), app.Config{
			Addr: "127.0.0.1:0", DatabaseURL: pgtest.NewDB(t), OperatorToken: token, Log: zerolog.Nop(),
		})
		if err == nil {
			m.Close()
		}
		if ok != (err == nil) || (!ok && !strings.Contains(err.Error(), "at least 32")) {
			t.Errorf("a %d-character operator token: %v", len(token), err)
		}
	}
}
