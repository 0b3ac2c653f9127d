package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
)

// ctlEnv is what every `tair ctl` subcommand shares: where the cluster
// is, and whether to print JSON.
type ctlEnv struct {
	csAddrs   []string
	proxyAddr string
	password  string
	// adminToken is the configserver's admin credential (--admin-token,
	// else $TAIR_ADMIN_TOKEN), sent with every request.
	adminToken string
	json       bool
}

func (e *ctlEnv) client() *wire.Client {
	c := wire.NewClient(e.csAddrs...)
	c.SetAdminToken(e.adminToken)
	return c
}

// ctx bounds one request to the configserver or proxy.
func (e *ctlEnv) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	if parent == nil {
		parent = context.Background()
	}
	return context.WithTimeout(parent, 10*time.Second)
}

// redis is a client of the proxy, in the given area (SELECT).
func (e *ctlEnv) redis(area int) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: e.proxyAddr, Password: e.password, Protocol: 2, DB: area,
		MaxRetries: -1, PoolSize: 1})
}

// print writes v as one line of JSON with --json, else runs text.
func (e *ctlEnv) print(cmd *cobra.Command, v any, text func(w io.Writer) error) error {
	if e.json {
		return writeJSONLine(cmd.OutOrStdout(), v)
	}
	return text(cmd.OutOrStdout())
}

// writeJSONLine writes v compactly, one document per line (so --watch
// and --wait stream one document per update).
func writeJSONLine(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}

// getJSON reads one GET document of the configserver API.
func (e *ctlEnv) getJSON(cmd *cobra.Command, path string, out any) error {
	c, cancel := e.ctx(cmd.Context())
	defer cancel()
	return e.client().Get(c, path, out)
}

// ctlStatus is `tair ctl status --json`: the table's shape, the
// dataservers counted, and the API's MigrationStatus as it is.
type ctlStatus struct {
	TableVersion route.Version        `json:"table_version"`
	Buckets      uint32               `json:"buckets"`
	Copies       int                  `json:"copies"`
	DataServers  int                  `json:"dataservers"`
	Alive        int                  `json:"alive"`
	LostCopies   int                  `json:"lost_copies"`
	Migrations   wire.MigrationStatus `json:"migrations"`
	// Nodes are each dataserver's memory and disk (its last heartbeat).
	Nodes []ctlNodeResources `json:"nodes"`
}

// ctlNodeResources is one dataserver's line of `tair ctl status`.
type ctlNodeResources struct {
	Addr  string `json:"addr"`
	Alive bool   `json:"alive"`
	*wire.NodeResources
}

// ctlAreaSet is `tair ctl area set --json`: the admin reply and the
// area's settings as sent (the old ones merged with the flags given).
type ctlAreaSet struct {
	wire.AdminReply
	Area   uint16          `json:"area"`
	Config wire.AreaConfig `json:"config"`
}

// ctlStat is `tair ctl stat --json`: TAIR.STAT's counters under
// wire.AreaStats's names.
type ctlStat struct {
	Area int `json:"area"`
	wire.AreaStats
}

// quietLog drops go-redis's log lines.
type quietLog struct{}

func (quietLog) Printf(context.Context, string, ...any) {}

// ctlCmd is the administration tool (Tair's cst_monitor and tairclient).
func ctlCmd() *cobra.Command {
	e := &ctlEnv{}
	cmd := &cobra.Command{Use: "ctl", Short: "administer a running cluster"}
	pf := cmd.PersistentFlags()
	pf.StringSliceVar(&e.csAddrs, "configserver", []string{"127.0.0.1:5198"},
		"configserver `addresses` (when not given: those of the tair up running for this user, if any)")
	pf.StringVar(&e.proxyAddr, "proxy", "127.0.0.1:6379",
		"proxy `address` for stat and shell (when not given: the running tair up's, if any)")
	pf.StringVar(&e.password, "password", "", "proxy password")
	pf.StringVar(&e.adminToken, "admin-token", "", "the configservers' admin credential, for the commands that change the cluster (default $TAIR_ADMIN_TOKEN, else the running tair up's)")
	pf.BoolVar(&e.json, "json", false, "print JSON (the configserver API's structures; one document per line)")
	cmd.PersistentPreRun = func(c *cobra.Command, _ []string) {
		// The error a command returns says it; go-redis's own log lines
		// ("failed to dial after 5 attempts") would say it twice.
		redis.SetLogger(quietLog{})
		if !c.Flags().Changed("admin-token") {
			e.adminToken = os.Getenv("TAIR_ADMIN_TOKEN")
		}
		// No address given: the cluster `tair up` (`make run`) runs.
		info, ok := readUpInfo()
		if !ok {
			return
		}
		if !c.Flags().Changed("configserver") {
			e.csAddrs = info.ConfigServers
			// That cluster's credential, unless one was given: never
			// sent to a configserver named on the command line.
			if e.adminToken == "" {
				e.adminToken = info.AdminToken
			}
		}
		if !c.Flags().Changed("proxy") && info.Proxy != "" {
			e.proxyAddr = info.Proxy
		}
	}

	status := &cobra.Command{
		Use: "status", Short: "cluster summary", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, cancel := e.ctx(cmd.Context())
			defer cancel()
			t, err := e.client().Table(c, 0, 0)
			if err != nil {
				return err
			}
			var nodes []wire.NodeStatus
			if err := e.client().Get(c, "/v1/nodes", &nodes); err != nil {
				return err
			}
			var mig wire.MigrationStatus
			if err := e.client().Get(c, "/v1/migrations", &mig); err != nil {
				return err
			}
			st := ctlStatus{TableVersion: t.Version, Buckets: t.Buckets, Copies: t.Copies,
				DataServers: len(nodes), Migrations: mig}
			st.Nodes = []ctlNodeResources{}
			sort.Slice(nodes, func(i, j int) bool { return nodes[i].Addr < nodes[j].Addr })
			for _, n := range nodes {
				if n.Alive {
					st.Alive++
				}
				st.Nodes = append(st.Nodes, ctlNodeResources{Addr: n.Addr, Alive: n.Alive, NodeResources: n.Resources})
			}
			for _, row := range t.Serving {
				for _, n := range row {
					if n == "" {
						st.LostCopies++
					}
				}
			}
			return e.print(cmd, st, func(w io.Writer) error {
				fmt.Fprintf(w, "table version   %d\nbuckets         %d\ncopies          %d\n", st.TableVersion, st.Buckets, st.Copies)
				fmt.Fprintf(w, "dataservers     %d alive of %d\nlost copies     %d\n", st.Alive, st.DataServers, st.LostCopies)
				rate := "each node's own"
				if mig.Rate != nil {
					rate = strconv.FormatInt(*mig.Rate, 10) + " B/s"
					if *mig.Rate == 0 {
						rate = "no cap"
					}
				}
				fmt.Fprintf(w, "migrations      %d running, %d pending, %d/%d done, paused=%v, rate=%s\n",
					len(mig.Running), len(mig.Pending), mig.Completed, mig.Total, mig.Paused, rate)
				fmt.Fprintf(w, "under-replicated %d buckets", mig.UnderReplicated)
				if mig.UnderReplicated > 0 {
					fmt.Fprintf(w, " (the oldest for %.1fs; %d with no live copy)", mig.UnderReplicatedSeconds, mig.Unavailable)
				}
				if mig.LastRestoreSeconds > 0 {
					fmt.Fprintf(w, "; last restore took %.1fs", mig.LastRestoreSeconds)
				}
				fmt.Fprintln(w)
				for _, n := range st.Nodes {
					fmt.Fprintf(w, "node %s  %s\n", n.Addr, resourcesLine(n.NodeResources))
				}
				return nil
			})
		},
	}
	table := &cobra.Command{
		Use: "table", Short: "print the bucket table (bucket, master, slaves)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, cancel := e.ctx(cmd.Context())
			defer cancel()
			t, err := e.client().Table(c, 0, 0)
			if err != nil {
				return err
			}
			return e.print(cmd, t, func(w io.Writer) error {
				_, err := fmt.Fprint(w, t.String())
				return err
			})
		},
	}
	nodes := &cobra.Command{
		Use: "nodes", Short: "list dataservers", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var list []wire.NodeStatus
			if err := e.getJSON(cmd, "/v1/nodes", &list); err != nil {
				return err
			}
			sort.Slice(list, func(i, j int) bool { return list[i].Addr < list[j].Addr })
			return e.print(cmd, list, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ADDR\tZONE\tALIVE\tDRAINING\tMASTERS\tSLAVES\tTABLE\tLOAD\tHEALTH\tHELD\tENGINE\tRSS\tDISK\tDISK-FREE")
				for _, n := range list {
					engine, rss, disk, free := "-", "-", "-", "-"
					if r := n.Resources; r != nil {
						engine, rss = sizeString(r.EngineBytes), sizeString(r.RSSBytes)
						if r.DataDir != "" {
							disk, free = sizeString(r.DiskUsedBytes), sizeString(r.DiskFreeBytes)
						}
					}
					fmt.Fprintf(tw, "%s\t%s\t%v\t%v\t%d\t%d\t%d\t%.0f\t%s\t%d/%d\t%s\t%s\t%s\t%s\n", n.Addr, n.Zone, n.Alive, n.Draining, n.Masters, n.Slaves, n.TableVersion, n.Load,
						n.Health, n.HeldMasters, n.HeldSlaves, engine, rss, disk, free)
				}
				return tw.Flush()
			})
		},
	}
	cmd.AddCommand(status, table, nodes, migrationsCmd(e), nodeCmd(e), adminCmd(e, "rebalance", "plan moves that rebalance the table", "rebalance"),
		migrateCmd(e), areaCmd(e), hooksCmd(e), statCmd(e), shellCmd(e), hotkeysCmd(e),
		backupCmd(e), restoreCmd(e))
	return cmd
}

// adminCmd is a subcommand without arguments that sends one admin op.
func adminCmd(e *ctlEnv, use, short, op string) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := e.admin(cmd, &wire.AdminRequest{Op: op})
			return err
		},
	}
}

// admin sends req to the leader and prints its reply: "OK message", or
// with --json the AdminReply. A refusal is an error (exit status 1).
func (e *ctlEnv) admin(cmd *cobra.Command, req *wire.AdminRequest) (*wire.AdminReply, error) {
	return e.adminAs(cmd, req, func(reply *wire.AdminReply) (any, string) {
		return reply, okLine(reply.Message)
	})
}

// adminAs is admin printing what show makes of the reply: v with --json,
// else line (nothing when the op was refused: the error says why).
func (e *ctlEnv) adminAs(cmd *cobra.Command, req *wire.AdminRequest, show func(*wire.AdminReply) (v any, line string)) (*wire.AdminReply, error) {
	reply, err := e.adminQuiet(cmd, req)
	if err != nil {
		return nil, err
	}
	v, line := show(reply)
	if perr := e.print(cmd, v, func(w io.Writer) error {
		if !reply.OK {
			return nil
		}
		_, err := fmt.Fprintln(w, line)
		return err
	}); perr != nil {
		return nil, perr
	}
	if !reply.OK {
		return reply, fmt.Errorf("%s", reply.Message)
	}
	return reply, nil
}

func (e *ctlEnv) adminQuiet(cmd *cobra.Command, req *wire.AdminRequest) (*wire.AdminReply, error) {
	c, cancel := e.ctx(cmd.Context())
	defer cancel()
	return e.client().Admin(c, req)
}

// resourcesLine shows a node's memory and disk on one line.
func resourcesLine(r *wire.NodeResources) string {
	if r == nil {
		return "no report"
	}
	s := fmt.Sprintf("memory %s engine", sizeString(r.EngineBytes))
	if r.MemoryLimit > 0 {
		s += " of " + sizeString(r.MemoryLimit)
	}
	s += fmt.Sprintf(", %s rss", sizeString(r.RSSBytes))
	if r.DataDir != "" {
		s += fmt.Sprintf("; disk %s used, %s free of %s (%s)", sizeString(r.DiskUsedBytes), sizeString(r.DiskFreeBytes),
			sizeString(r.DiskTotalBytes), r.DataDir)
	}
	return s
}

// sizeString shows n bytes in binary units: "512B", "1.5KiB", "20.0GiB".
func sizeString(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%dB", n)
	}
	f, i := float64(n)/1024, 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return fmt.Sprintf("%.1f%ciB", f, units[i])
}

// parseArea reads an AREA argument (0..route.MaxArea).
func parseArea(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n > route.MaxArea {
		return 0, fmt.Errorf("area must be 0..%d", route.MaxArea)
	}
	return uint16(n), nil
}

// okLine is "OK" and the reply's message, if any.
func okLine(msg string) string {
	if msg == "" {
		return "OK"
	}
	return "OK " + msg
}

func nodeCmd(e *ctlEnv) *cobra.Command {
	node := &cobra.Command{Use: "node", Short: "add, remove or drain a dataserver"}
	op := func(op, short string) *cobra.Command {
		return &cobra.Command{
			Use: op + " ADDR", Short: short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				_, err := e.admin(cmd, &wire.AdminRequest{Op: "node-" + op, Node: args[0]})
				return err
			},
		}
	}
	node.AddCommand(op("add", "let a drained or removed dataserver hold copies again"),
		op("remove", "take a drained or dead dataserver out of the cluster"),
		drainCmd(e))
	return node
}

func migrateCmd(e *ctlEnv) *cobra.Command {
	migrate := &cobra.Command{Use: "migrate", Short: "pause, resume, cancel or cap migrations"}
	rate := &cobra.Command{
		Use:   "rate <bytes-per-sec|default>",
		Short: "cap each move's copy rate on every dataserver (0: no cap; default: each node's --migrate-bytes-per-sec); running moves follow at once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &wire.AdminRequest{Op: "migrations-rate"}
			if args[0] != "default" {
				r, err := strconv.ParseInt(args[0], 10, 64)
				if err != nil || r < 0 {
					return fmt.Errorf("rate %q: want bytes a second (0: no cap) or default", args[0])
				}
				req.Rate = &r
			}
			_, err := e.admin(cmd, req)
			return err
		},
	}
	migrate.AddCommand(rate,
		adminCmd(e, "pause", "start no new moves (running ones finish)", "migrations-pause"),
		adminCmd(e, "resume", "start the planned moves again", "migrations-resume"),
		adminCmd(e, "cancel", "drop the plan and the running moves (the next change or rebalance plans again)", "migrations-cancel"))
	return migrate
}

func areaCmd(e *ctlEnv) *cobra.Command {
	area := &cobra.Command{Use: "area", Short: "per-area settings"}
	var quota, opsLimit, bytesLimit int64
	var readOnly bool
	areaSet := &cobra.Command{
		Use:   "set AREA",
		Short: "change an area's quota, flow limits or read-only switch (flags left out keep their setting)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := parseArea(args[0])
			if err != nil {
				return err
			}
			f := cmd.Flags()
			if !f.Changed("quota") && !f.Changed("ops") && !f.Changed("bytes") && !f.Changed("read-only") {
				return fmt.Errorf("nothing to set: give --quota, --ops, --bytes or --read-only")
			}
			// The API sets an area's whole config: start from the current
			// one, so flags left out keep their value.
			var areas map[uint16]wire.AreaConfig
			if err := e.getJSON(cmd, "/v1/areas", &areas); err != nil {
				return err
			}
			cfg := areas[n]
			if f.Changed("quota") {
				cfg.QuotaBytes = quota
			}
			if f.Changed("ops") {
				cfg.OpsLimit = opsLimit
			}
			if f.Changed("bytes") {
				cfg.BytesLimit = bytesLimit
			}
			if f.Changed("read-only") {
				cfg.ReadOnly = readOnly
			}
			_, err = e.adminAs(cmd, &wire.AdminRequest{Op: "area-set", Area: n, Config: cfg}, func(reply *wire.AdminReply) (any, string) {
				return ctlAreaSet{AdminReply: *reply, Area: n, Config: cfg}, fmt.Sprintf("OK area %d: %s", n, areaSettings(cfg))
			})
			return err
		},
	}
	areaSet.Flags().Int64Var(&quota, "quota", 0, "byte quota (0 = none)")
	areaSet.Flags().Int64Var(&opsLimit, "ops", 0, "ops/s limit (0 = none)")
	areaSet.Flags().Int64Var(&bytesLimit, "bytes", 0, "bytes/s limit (0 = none)")
	areaSet.Flags().BoolVar(&readOnly, "read-only", false, "refuse writes (--read-only=false allows them again)")
	areaList := &cobra.Command{
		Use: "list", Short: "print every area's settings", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var areas map[uint16]wire.AreaConfig
			if err := e.getJSON(cmd, "/v1/areas", &areas); err != nil {
				return err
			}
			if areas == nil {
				areas = map[uint16]wire.AreaConfig{}
			}
			return e.print(cmd, areas, func(w io.Writer) error {
				ids := make([]int, 0, len(areas))
				for a := range areas {
					ids = append(ids, int(a))
				}
				sort.Ints(ids)
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "AREA\tQUOTA\tOPS/S\tBYTES/S\tREAD-ONLY")
				for _, a := range ids {
					c := areas[uint16(a)]
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%v\n", a, limit(c.QuotaBytes), limit(c.OpsLimit), limit(c.BytesLimit), c.ReadOnly)
				}
				return tw.Flush()
			})
		},
	}
	area.AddCommand(areaSet, areaList)
	return area
}

// limit shows a limit, 0 as "none".
func limit(n int64) string {
	if n == 0 {
		return "none"
	}
	return strconv.FormatInt(n, 10)
}

// areaSettings is one area's config on one line.
func areaSettings(c wire.AreaConfig) string {
	return fmt.Sprintf("quota %s, ops/s %s, bytes/s %s, read-only %v", limit(c.QuotaBytes), limit(c.OpsLimit), limit(c.BytesLimit), c.ReadOnly)
}

// hooksCmd is `tair ctl hooks`: show, set, or switch on and off the
// dataservers' request hooks (applied without a restart).
func hooksCmd(e *ctlEnv) *cobra.Command {
	hooks := &cobra.Command{
		Use: "hooks", Short: "show the dataservers' request hooks (set, on, off change them)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var st wire.HooksStatus
			if err := e.getJSON(cmd, "/v1/hooks", &st); err != nil {
				return err
			}
			return e.print(cmd, st, func(w io.Writer) error {
				enabled := wire.HookList(st.Enabled)
				if !st.Set {
					enabled += " (default)"
				}
				_, err := fmt.Fprintf(w, "enabled  %s\nknown    %s\n", enabled, strings.Join(st.Known, ","))
				return err
			})
		},
	}
	op := func(use, short, op string) *cobra.Command {
		return &cobra.Command{
			Use: use, Short: short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				_, err := e.admin(cmd, &wire.AdminRequest{Op: op, Hooks: hookNames(args[0])})
				return err
			},
		}
	}
	hooks.AddCommand(
		op("set NAME[,NAME...]", `switch on exactly these hooks, in this order ("" = none)`, "hooks-set"),
		op("on NAME[,NAME...]", "switch hooks on (appended to the order)", "hooks-on"),
		op("off NAME[,NAME...]", "switch hooks off", "hooks-off"),
	)
	return hooks
}

// hookNames splits a comma-separated hook list ("" = none).
func hookNames(list string) []string {
	names := []string{}
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return names
}

func statCmd(e *ctlEnv) *cobra.Command {
	return &cobra.Command{
		Use: "stat [AREA]", Short: "an area's counters summed over the dataservers (TAIR.STAT; default area 0)", Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			area := 0
			if len(args) == 1 {
				n, err := parseArea(args[0])
				if err != nil {
					return err
				}
				area = int(n)
			}
			c, cancel := e.ctx(cmd.Context())
			defer cancel()
			r := e.redis(0)
			defer r.Close()
			res, err := r.Do(c, "tair.stat", area).Result()
			if err != nil {
				return err
			}
			st, err := parseStat(area, res)
			if err != nil {
				return err
			}
			return e.print(cmd, st, func(w io.Writer) error {
				_, err := fmt.Fprint(w, formatStat(st))
				return err
			})
		},
	}
}

// statFields are TAIR.STAT's fields, in its order.
var statFields = []string{"keys", "bytes", "gets", "puts", "hits", "misses", "evictions"}

// parseStat reads TAIR.STAT's field/value pairs (a flat array in RESP2).
func parseStat(area int, res any) (ctlStat, error) {
	st := ctlStat{Area: area}
	pairs, ok := res.([]any)
	if !ok || len(pairs)%2 != 0 {
		return st, fmt.Errorf("unexpected TAIR.STAT reply %v", res)
	}
	vals := map[string]int64{}
	for i := 0; i < len(pairs); i += 2 {
		n, ok := pairs[i+1].(int64)
		if !ok {
			return st, fmt.Errorf("unexpected TAIR.STAT reply %v", res)
		}
		vals[fmt.Sprint(pairs[i])] = n
	}
	st.Keys, st.Bytes, st.Gets, st.Puts = vals["keys"], vals["bytes"], vals["gets"], vals["puts"]
	st.Hits, st.Misses, st.Evictions = vals["hits"], vals["misses"], vals["evictions"]
	return st, nil
}

// formatStat prints the counters one a line, as tairclient's stat.
func formatStat(st ctlStat) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s %d\n", "area", st.Area)
	for _, f := range statFields {
		var v int64
		switch f {
		case "keys":
			v = st.Keys
		case "bytes":
			v = st.Bytes
		case "gets":
			v = st.Gets
		case "puts":
			v = st.Puts
		case "hits":
			v = st.Hits
		case "misses":
			v = st.Misses
		case "evictions":
			v = st.Evictions
		}
		fmt.Fprintf(&b, "%-10s %d\n", f, v)
	}
	return b.String()
}
