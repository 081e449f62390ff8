package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall/api"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
)

// homeCluster is how commands name the cluster of DATABASE_URL.
const homeCluster = "home"

var clusterNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// clusterEntry is the start of one name=URL of --clusters; what follows a
// comma and does not start another is part of the URL before it (a URL
// listing several hosts: postgres://db1:5432,db2:5432/oncecall).
var clusterEntry = regexp.MustCompile(`^[^=,/:?@]+=`)

// parseClusters reads --clusters / ONCECALL_CLUSTERS: name=URL pairs,
// separated by commas, of the clusters besides the home one
// (docs/scaling.md#tenants-across-clusters).
func parseClusters(s string) ([]app.ClusterURL, error) {
	var entries []string
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		switch {
		case part == "":
		case clusterEntry.MatchString(part) || len(entries) == 0:
			entries = append(entries, part)
		default:
			entries[len(entries)-1] += "," + part
		}
	}
	var out []app.ClusterURL
	seen := map[string]bool{}
	for _, e := range entries {
		name, url, ok := strings.Cut(e, "=")
		switch {
		case !ok || url == "":
			return nil, fmt.Errorf("--clusters: %q is not name=URL", name)
		case !clusterNamePattern.MatchString(name):
			return nil, fmt.Errorf("--clusters: cluster name %q must be lower-case letters, digits, - and _ (at most 63)", name)
		case name == homeCluster:
			return nil, fmt.Errorf("--clusters: %q names the cluster of DATABASE_URL; give the others other names", homeCluster)
		case seen[name]:
			return nil, fmt.Errorf("--clusters: cluster %q is named twice", name)
		case !strings.HasPrefix(url, "postgres://") && !strings.HasPrefix(url, "postgresql://"):
			return nil, fmt.Errorf("--clusters: cluster %s's URL is not a postgres:// URL", name)
		}
		seen[name] = true
		out = append(out, app.ClusterURL{Name: name, URL: url})
	}
	return out, nil
}

// everyCluster is DATABASE_URL's cluster ("home") and those of
// ONCECALL_CLUSTERS, for the commands that act on each (reconcile, prune).
func everyCluster() ([]app.ClusterURL, error) {
	home, err := needDatabaseURL()
	if err != nil {
		return nil, err
	}
	clusters, err := parseClusters(os.Getenv("ONCECALL_CLUSTERS"))
	if err != nil {
		return nil, err
	}
	return append([]app.ClusterURL{{Name: homeCluster, URL: home}}, clusters...), nil
}

// clusterPrefix names the cluster a line of a command's output is about,
// when it acts on more than one.
func clusterPrefix(c app.ClusterURL, all []app.ClusterURL) string {
	if len(all) == 1 {
		return ""
	}
	return "cluster " + c.Name + ": "
}

// clusterURL is the URL of the named cluster ("" or "home": DATABASE_URL).
func clusterURL(home string, clusters []app.ClusterURL, name string) (string, error) {
	if name == "" || name == homeCluster {
		return home, nil
	}
	for _, c := range clusters {
		if c.Name == name {
			return c.URL, nil
		}
	}
	return "", fmt.Errorf("no cluster %q in ONCECALL_CLUSTERS (or --clusters)", name)
}

func tenantMove(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("tenant move", stderr)
	ref := fs.String("tenant", "", "the tenant's id (required)")
	to := fs.String("to", "", `the cluster to move it to: a name of --clusters, or "home" for DATABASE_URL's (required)`)
	list := fs.String("clusters", os.Getenv("ONCECALL_CLUSTERS"), "the clusters besides DATABASE_URL's, name=URL,... as the servers have them (env ONCECALL_CLUSTERS)")
	drain := fs.Duration("drain", 10*time.Second, "how long to wait for the tenant's requests still running on its cluster; past it the move is refused")
	maxPause := fs.Duration("max-pause", time.Minute, "the longest the tenant's requests may be paused; a move not switched by then gives up and leaves the tenant where it was")
	if err := fs.Parse(args); err != nil {
		return err
	}
	tenant, err := uuid.Parse(strings.TrimSpace(*ref))
	if err != nil {
		return errors.New("--tenant is required: the tenant's id")
	}
	if *to == "" {
		return errors.New("--to is required: the cluster to move the tenant to")
	}
	if *drain <= 0 || *maxPause <= api.DirectoryTTL+*drain {
		return fmt.Errorf("--drain must be positive and --max-pause longer than the directory's %v and --drain", api.DirectoryTTL)
	}
	clusters, err := parseClusters(*list)
	if err != nil {
		return err
	}
	homeURL, err := needDatabaseURL()
	if err != nil {
		return err
	}
	target := *to
	if target == homeCluster {
		target = ""
	}
	targetURL, err := clusterURL(homeURL, clusters, target)
	if err != nil {
		return err
	}
	// Every cluster at the latest schema, the directory's table included.
	for _, u := range append([]string{homeURL}, targetURL) {
		if err := app.Migrate(ctx, u); err != nil {
			return err
		}
	}
	home, err := app.OpenDB(ctx, homeURL, migrateDatabaseURL(), 2)
	if err != nil {
		return err
	}
	defer home.Close()
	store := db.New(home)
	current, err := store.TenantCluster(ctx, tenant)
	if err != nil {
		return err
	}
	sourceURL, err := clusterURL(homeURL, clusters, current)
	if err != nil {
		return fmt.Errorf("the directory places the tenant on cluster %q: %w", current, err)
	}
	source, err := pgx.Connect(ctx, sourceURL)
	if err != nil {
		return fmt.Errorf("connect to the tenant's cluster: %w", err)
	}
	defer source.Close(context.WithoutCancel(ctx))
	dest, err := pgx.Connect(ctx, targetURL)
	if err != nil {
		return fmt.Errorf("connect to cluster %s: %w", *to, err)
	}
	defer dest.Close(context.WithoutCancel(ctx))

	from := current
	if from == "" {
		from = homeCluster
	}
	fmt.Fprintf(stdout, "moving tenant %s from %s to %s\n", tenant, from, *to)
	res, err := db.TenantMove{
		Home: store, Source: source, Target: dest, TargetName: target, Tenant: tenant,
		// Every server reads the directory at most DirectoryTTL late.
		Settle: api.DirectoryTTL + 500*time.Millisecond, Drain: *drain, MaxPause: *maxPause,
		Progress: stdout,
	}.Run(ctx)
	if err != nil {
		return err
	}
	for _, t := range res.Tables {
		if t.Rows > 0 {
			fmt.Fprintf(stdout, "  %-24s %d rows\n", t.Table, t.Rows)
		}
	}
	fmt.Fprintf(stdout, "moved %d rows in %d tables; the tenant's requests were paused for %s\n",
		res.Rows(), len(res.Tables), res.Paused.Round(time.Millisecond))
	return nil
}
