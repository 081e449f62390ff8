package oncecall_test

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The layers of docs/architecture.md point down: only the wiring
// (internal/app, cmd/) sees every layer. A package under internal/ or db/
// does not import the HTTP API (api/...) or the reconciler; the storage
// layer does not import the application's error vocabulary (internal/fault:
// db.Fault says what a failure means, fault.As gives it its code) nor its
// clock (internal/schedule). Only production imports count; a test may
// reach up.
func TestImportsPointDown(t *testing.T) {
	t.Parallel()
	const module = "github.com/oncecall/oncecall"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	under := func(pkg, dir string) bool {
		return pkg == module+"/"+dir || strings.HasPrefix(pkg, module+"/"+dir+"/")
	}
	type rule struct {
		from   func(pkg string) bool
		denied []string // folders, each with everything under it
		why    string
	}
	rules := []rule{{
		from: func(p string) bool {
			return (under(p, "internal") && !under(p, "internal/app")) || under(p, "db")
		},
		denied: []string{"api", "reconcile"},
		why:    "only the wiring (internal/app, cmd/) imports the HTTP API or the reconciler",
	}, {
		from:   func(p string) bool { return under(p, "db") },
		denied: []string{"internal/fault"},
		why:    "storage does not import the application's error vocabulary",
	}}
	var bad []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		pkg, imports := fields[0], fields[1:]
		for _, r := range rules {
			if !r.from(pkg) {
				continue
			}
			for _, imp := range imports {
				if slices.ContainsFunc(r.denied, func(d string) bool { return under(imp, d) }) {
					bad = append(bad, strings.TrimPrefix(pkg, module+"/")+" imports "+strings.TrimPrefix(imp, module+"/")+" ("+r.why+")")
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Errorf("%d imports point up:\n%s", len(bad), strings.Join(bad, "\n"))
	}
}

// An operation is a value whose methods a reader can jump to, not a bundle
// of closures: no struct of the operation registry, the idempotency core
// or the storage layer has a function-typed field (docs/architecture.md,
// "Following a call"). The exceptions carry no operation's logic: a clock
// a test may set, and a column type's binary decoder.
func TestNoFunctionFields(t *testing.T) {
	t.Parallel()
	allowed := map[string]bool{
		"internal/idem.answers.now": true, // the clock of the answers kept in memory
		"db.nullScan.read":          true, // a column type's binary decoder (scanplans.go)
	}
	var bad []string
	for _, dir := range []string{"internal/op", "internal/idem", "db"} {
		pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi fs.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(pkgs) == 0 {
			t.Fatalf("%s: no package", dir)
		}
		for _, pkg := range pkgs {
			ast.Inspect(pkg, func(n ast.Node) bool {
				spec, ok := n.(*ast.TypeSpec)
				if !ok {
					return true
				}
				st, ok := spec.Type.(*ast.StructType)
				if !ok {
					return true
				}
				for _, f := range st.Fields.List {
					if _, isFunc := f.Type.(*ast.FuncType); !isFunc {
						continue
					}
					for _, name := range f.Names {
						if id := dir + "." + spec.Name.Name + "." + name.Name; !allowed[id] {
							bad = append(bad, id)
						}
					}
				}
				return true
			})
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d function-typed fields:\n%s", len(bad), strings.Join(bad, "\n"))
	}
}
