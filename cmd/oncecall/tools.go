package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/dashatool"
	"github.com/oncecall/oncecall/internal/message"
)

const toolsUsage = "usage: oncecall tools export --base-url URL [--platform dasha|vapi|retell|elevenlabs] [--api-key-placeholder TEXT] [--tenant ID_OR_NAME] [--out DIR]"

// tools prints the tool definitions of a voice platform (Dasha by default):
// a JSON array ready to paste, or for Dasha one file per tool with --out.
func tools(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if helpAsked(args, toolsUsage, stdout) {
		return nil
	}
	if len(args) == 0 || args[0] != "export" {
		return errors.New(toolsUsage)
	}
	fs := newFlags("tools export", stderr)
	baseURL := fs.String("base-url", "", "oncecall's public URL as Dasha reaches it, e.g. https://oncecall.example.com (required)")
	placeholder := fs.String("api-key-placeholder", dashatool.DefaultAPIKeyPlaceholder, "text written after 'Bearer ' in each tool's Authorization header")
	out := fs.String("out", "", "write DIR/<tool>.json per tool instead of printing one JSON array")
	platform := fs.String("platform", "dasha", "the voice platform whose tool definitions to print: dasha, vapi, retell or elevenlabs")
	tenantRef := fs.String("tenant", "", "list this tenant's message templates (id or name) in send_message's schema; needs DATABASE_URL")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *baseURL == "" {
		return errors.New("--base-url is required; " + toolsUsage)
	}
	defs, err := dashatool.Definitions(app.Operations(), *baseURL, *placeholder)
	if err != nil {
		return err
	}
	if why := unreachableBase(*baseURL); why != "" {
		fmt.Fprintf(stderr, "warning: the voice platform cannot reach --base-url %s: %s. Dasha rejects such webhook URLs; "+
			"give oncecall's public HTTPS URL, or a tunnel's to a local server.\n", *baseURL, why)
	}
	if *tenantRef != "" {
		if err := withTenantTemplates(ctx, defs, *tenantRef); err != nil {
			return err
		}
	}
	if *platform != "dasha" {
		if *out != "" {
			return errors.New("--out writes Dasha definitions only; print the others and paste them")
		}
		list, err := dashatool.PlatformDefinitions(*platform, defs, *baseURL, *placeholder)
		if err != nil {
			return err
		}
		b, err := dashatool.Marshal(list)
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return err
	}
	if *out != "" {
		if err := dashatool.WriteDir(*out, defs); err != nil {
			return fmt.Errorf("write tool definitions: %w", err)
		}
		fmt.Fprintf(stdout, "wrote %d tool definitions to %s\n", len(defs), *out)
		return nil
	}
	b, err := dashatool.Marshal(defs)
	if err != nil {
		return err
	}
	_, err = stdout.Write(b)
	return err
}

// withTenantTemplates narrows send_message to the templates a tenant can
// send, read from the database.
func withTenantTemplates(ctx context.Context, defs []dashatool.Definition, ref string) error {
	store, closeDB, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer closeDB()
	t, err := findTenant(ctx, store, ref)
	if err != nil {
		return err
	}
	ts, err := message.ListTemplates(ctx, store, t.ID)
	if err != nil {
		return fmt.Errorf("list templates: %w", err)
	}
	list := make([]dashatool.Template, len(ts))
	for i, m := range ts {
		list[i] = dashatool.Template{Name: m.Name, Required: m.Variables.Required, Optional: m.Variables.Optional}
	}
	dashatool.WithTemplates(defs, message.Send.Tool(), list)
	return nil
}
