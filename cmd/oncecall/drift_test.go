package main

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestEveryToolIsInDashaDocs: every tool definition in tools/ has a row in
// docs/dasha.md's table of tools, and every row names a tool.
func TestEveryToolIsInDashaDocs(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../tools/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no tools/*.json: %v", err)
	}
	doc, err := os.ReadFile("../../docs/dasha.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		rows[m[1]] = true
	}
	tools := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var def struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(b, &def); err != nil || def.Name == "" {
			t.Fatalf("%s: no tool name (%v)", f, err)
		}
		tools[def.Name] = true
		if !rows[def.Name] {
			t.Errorf("tools/%s: the tool %s has no row in docs/dasha.md's table of tools", filepath.Base(f), def.Name)
		}
	}
	for name := range rows {
		if !tools[name] {
			t.Errorf("docs/dasha.md's table of tools has a row for %s, which is not in tools/", name)
		}
	}
}

// TestEveryEnvironmentVariableIsInConfigurationDocs: every environment
// variable the oncecall binary reads (os.Getenv, os.LookupEnv and the
// command's own helpers, in this module's packages the binary links) is
// named in docs/configuration.md. A name built from parts, such as
// "ONCECALL_PROVIDER_" + capability + "_URL", must appear with <CAP> for
// the part that is not a constant.
func TestEveryEnvironmentVariableIsInConfigurationDocs(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "list", "-deps", "-f",
		`{{if .Module}}{{if eq .Module.Path "github.com/oncecall/oncecall"}}{{.Dir}}{{range .GoFiles}} {{.}}{{end}}{{"\n"}}{{end}}{{end}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	names := map[string]string{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		for _, f := range fields[1:] {
			path := filepath.Join(fields[0], f)
			for _, name := range envReads(t, path) {
				names[name] = path
			}
		}
	}
	for _, want := range []string{"DATABASE_URL", "ONCECALL_ADDR", "ONCECALL_EMBEDDED_PORT", "ONCECALL_PROVIDER_<CAP>_URL", "LOG_LEVEL"} {
		if _, ok := names[want]; !ok {
			t.Errorf("found no read of %s: the search is broken (found %v)", want, slices.Sorted(maps.Keys(names)))
		}
	}
	for name, path := range names {
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("%s reads the environment variable %s, which docs/configuration.md does not name", path, name)
		}
	}
}

// envReads returns the environment variables a Go file reads by name.
func envReads(t *testing.T, path string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Local variables assigned once from a name expression (prefix := ...).
	locals := map[string]ast.Expr{}
	ast.Inspect(f, func(n ast.Node) bool {
		if a, ok := n.(*ast.AssignStmt); ok && len(a.Lhs) == 1 && len(a.Rhs) == 1 {
			if id, ok := a.Lhs[0].(*ast.Ident); ok {
				locals[id.Name] = a.Rhs[0]
			}
		}
		return true
	})
	// eval spells a name expression; ok when it has a constant part.
	var eval func(e ast.Expr, depth int) (string, bool)
	eval = func(e ast.Expr, depth int) (string, bool) {
		switch e := e.(type) {
		case *ast.BasicLit:
			if s, err := strconv.Unquote(e.Value); err == nil && e.Kind == token.STRING {
				return s, true
			}
		case *ast.BinaryExpr:
			if e.Op == token.ADD {
				x, okx := eval(e.X, depth)
				y, oky := eval(e.Y, depth)
				return x + y, okx || oky
			}
		case *ast.Ident:
			if r, ok := locals[e.Name]; ok && depth < 3 {
				return eval(r, depth+1)
			}
		}
		return "<CAP>", false
	}
	// Functions that read a variable, and which argument is its name.
	readers := map[string]int{
		"Getenv": 0, "LookupEnv": 0, "env": 0, "getenv": 0, "envLookup": 0,
		"duration": 0, "int": 0, "float": 0, "bool": 0, "durationVar": 1, "boolVar": 1,
	}
	var names []string
	envName := regexp.MustCompile(`^[A-Z][A-Z0-9_]*(<CAP>[A-Z0-9_]*)?$`)
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		var fn string
		switch f := call.Fun.(type) {
		case *ast.Ident:
			fn = f.Name
		case *ast.SelectorExpr:
			x, _ := f.X.(*ast.Ident)
			if x == nil || (x.Name != "os" && x.Name != "envs") {
				return true
			}
			fn = f.Sel.Name
		}
		i, ok := readers[fn]
		if !ok || i >= len(call.Args) {
			return true
		}
		if name, ok := eval(call.Args[i], 0); ok && envName.MatchString(name) {
			names = append(names, name)
		}
		return true
	})
	return names
}

// TestEverySubcommandIsInTheUsageAndReadme: every subcommand that a command
// group's usage names (oncecall tenant --help, ...) is in oncecall's own
// usage and in README's table of commands, where "actions list|show"
// names two.
func TestEverySubcommandIsInTheUsageAndReadme(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	table, _, _ := strings.Cut(strings.SplitN(string(readme), "\n## Commands\n", 2)[1], "\n## ")
	var top bytes.Buffer
	if err := run(t.Context(), []string{"help"}, &top, &top); err != nil {
		t.Fatal(err)
	}
	cmd := regexp.MustCompile(`oncecall ([a-z]+) ([a-z][a-z-]*(?:\|[a-z][a-z-]*)*)`)
	named := func(text string) map[string]bool {
		m := map[string]bool{}
		for _, c := range cmd.FindAllStringSubmatch(text, -1) {
			for sub := range strings.SplitSeq(c[2], "|") {
				m[c[1]+" "+sub] = true
			}
		}
		return m
	}
	usage, inReadme := named(top.String()), named(strings.ReplaceAll(table, `\|`, "|"))
	subcommands := 0
	for _, group := range []string{"tenant", "key", "actions", "operator", "calendar", "tools"} {
		var out bytes.Buffer
		if err := run(t.Context(), []string{group, "--help"}, &out, &out); err != nil {
			t.Fatalf("%s --help: %v", group, err)
		}
		for sub := range named(out.String()) {
			subcommands++
			if !usage[sub] {
				t.Errorf("oncecall's usage (main.go) does not name oncecall %s", sub)
			}
			if !inReadme[sub] {
				t.Errorf("README's table of commands does not name oncecall %s", sub)
			}
		}
	}
	if subcommands < 8 {
		t.Fatalf("found %d subcommands in the groups' usage: the extraction is broken", subcommands)
	}
}
