package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

const retellKeyUsage = "usage: oncecall key retell --tenant ID_OR_NAME (--api-key-env VAR | --remove)"

// retellKey sets or removes a tenant's Retell API key. With one, the
// tenant's Retell function calls must carry a valid X-Retell-Signature made
// with it. The key is read from an environment variable, not a flag, so it
// does not show in the process list.
func retellKey(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("key retell", stderr)
	tenantRef := fs.String("tenant", "", "the tenant: its id, or its name (required)")
	keyEnv := fs.String("api-key-env", "", "the environment variable holding the Retell API key (the one Retell marks for webhooks)")
	remove := fs.Bool("remove", false, "remove the tenant's Retell key: its Retell calls are then checked by the Bearer key alone")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ref := strings.TrimSpace(*tenantRef)
	if ref == "" || (*keyEnv == "") == !*remove {
		return errors.New(retellKeyUsage)
	}
	var key string
	if !*remove {
		key = strings.TrimSpace(os.Getenv(*keyEnv))
		if key == "" || len(key) > 200 {
			return fmt.Errorf("%s must hold the Retell API key (1 to 200 characters)", *keyEnv)
		}
	}
	store, closeDB, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer closeDB()
	t, err := findTenant(ctx, store, ref)
	if err != nil {
		return err
	}
	if *remove {
		had, err := store.DeleteRetellKey(ctx, t.ID)
		if err != nil {
			return fmt.Errorf("remove Retell key: %w", err)
		}
		if !had {
			fmt.Fprintf(stdout, "tenant %s (%s) had no Retell key\n", t.Name, t.ID)
			return nil
		}
		fmt.Fprintf(stdout, "removed the Retell key of tenant %s (%s)\n", t.Name, t.ID)
		return nil
	}
	if err := store.SetRetellKey(ctx, t.ID, key); err != nil {
		return fmt.Errorf("set Retell key: %w", err)
	}
	fmt.Fprintf(stdout, "tenant %s (%s): Retell function calls now need a valid X-Retell-Signature\n", t.Name, t.ID)
	return nil
}
