package main

import (
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

func TestParseClusters(t *testing.T) {
	t.Parallel()
	got, err := parseClusters("b=postgres://u@db1:5432,db2:5432/oncecall?target_session_attrs=read-write, c=postgresql://h/oncecall")
	if err != nil {
		t.Fatal(err)
	}
	want := []app.ClusterURL{
		{Name: "b", URL: "postgres://u@db1:5432,db2:5432/oncecall?target_session_attrs=read-write"},
		{Name: "c", URL: "postgresql://h/oncecall"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseClusters: %+v, want %+v", got, want)
	}
	if got, err := parseClusters(""); err != nil || len(got) != 0 {
		t.Errorf("empty: %v, %v", got, err)
	}
	for in, msg := range map[string]string{
		"home=postgres://h/db":                "names the cluster of DATABASE_URL",
		"b=postgres://h/db,b=postgres://i/db": "named twice",
		"B=postgres://h/db":                   "lower-case",
		"b=mysql://h/db":                      "not a postgres:// URL",
		"b":                                   "not name=URL",
		"b=postgres://h/db,c=":                "not name=URL",
	} {
		if _, err := parseClusters(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("parseClusters(%q): %v, want an error saying %q", in, err, msg)
		}
	}
}

// reconcile and prune act on every cluster of ONCECALL_CLUSTERS, each named
// in the output, and migrate each first.
func TestReconcileAndPruneEveryCluster(t *testing.T) {
	t.Setenv("DATABASE_URL", pgtest.NewDB(t))
	t.Setenv("ONCECALL_CLUSTERS", "b="+pgtest.NewEmptyDB(t))
	for _, args := range [][]string{{"prune", "--dry-run"}, {"prune"}, {"reconcile", "--once"}} {
		var out bytes.Buffer
		if err := run(t.Context(), args, &out, io.Discard); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for _, c := range []string{"home", "b"} {
			if !strings.Contains(out.String(), "cluster "+c+": ") {
				t.Errorf("%v: nothing said of cluster %s:\n%s", args, c, out.String())
			}
		}
	}
}
