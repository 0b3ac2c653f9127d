package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/tairkv/tair/internal/wire"
)

// ctlCmd is the administration tool (Tair's cst_monitor and tairclient).
func ctlCmd() *cobra.Command {
	var csAddrs []string
	var proxyAddr, password string
	client := func() *wire.Client { return wire.NewClient(csAddrs...) }
	ctx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 10*time.Second)
	}
	cmd := &cobra.Command{Use: "ctl", Short: "administer a running cluster"}
	cmd.PersistentFlags().StringSliceVar(&csAddrs, "configserver", []string{"127.0.0.1:5198"},
		"configserver addresses (default: those of the `tair up` running for this user, else 127.0.0.1:5198)")
	cmd.PersistentFlags().StringVar(&proxyAddr, "proxy", "127.0.0.1:6379",
		"proxy address for stat and shell (default: the running `tair up`'s, else 127.0.0.1:6379)")
	cmd.PersistentPreRun = func(c *cobra.Command, _ []string) {
		// No address given: the cluster `tair up` (`make run`) runs.
		info, ok := readUpInfo()
		if !ok {
			return
		}
		if !c.Flags().Changed("configserver") {
			csAddrs = info.ConfigServers
		}
		if !c.Flags().Changed("proxy") && info.Proxy != "" {
			proxyAddr = info.Proxy
		}
	}
	cmd.PersistentFlags().StringVar(&password, "password", "", "proxy password")

	status := &cobra.Command{
		Use: "status", Short: "cluster summary", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, cancel := ctx()
			defer cancel()
			t, err := client().Table(c, 0, 0)
			if err != nil {
				return err
			}
			var nodes []wire.NodeStatus
			if err := client().Get(c, "/v1/nodes", &nodes); err != nil {
				return err
			}
			var mig wire.MigrationStatus
			_ = client().Get(c, "/v1/migrations", &mig)
			alive := 0
			for _, n := range nodes {
				if n.Alive {
					alive++
				}
			}
			lost := 0
			for _, row := range t.Serving {
				for _, n := range row {
					if n == "" {
						lost++
					}
				}
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "table version   %d\nbuckets         %d\ncopies          %d\n", t.Version, t.Buckets, t.Copies)
			fmt.Fprintf(w, "dataservers     %d alive of %d\nlost copies     %d\n", alive, len(nodes), lost)
			fmt.Fprintf(w, "migrations      %d running, %d pending, %d/%d done, paused=%v\n",
				len(mig.Running), len(mig.Pending), mig.Completed, mig.Total, mig.Paused)
			fmt.Fprintf(w, "under-replicated %d buckets", mig.UnderReplicated)
			if mig.UnderReplicated > 0 {
				fmt.Fprintf(w, " (the oldest for %.1fs; %d with no live copy)", mig.UnderReplicatedSeconds, mig.Unavailable)
			}
			if mig.LastRestoreSeconds > 0 {
				fmt.Fprintf(w, "; last restore took %.1fs", mig.LastRestoreSeconds)
			}
			fmt.Fprintln(w)
			return nil
		},
	}
	table := &cobra.Command{
		Use: "table", Short: "print the bucket table (bucket, master, slaves)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, cancel := ctx()
			defer cancel()
			t, err := client().Table(c, 0, 0)
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), t.String())
			return nil
		},
	}
	nodes := &cobra.Command{
		Use: "nodes", Short: "list dataservers", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, cancel := ctx()
			defer cancel()
			var list []wire.NodeStatus
			if err := client().Get(c, "/v1/nodes", &list); err != nil {
				return err
			}
			sort.Slice(list, func(i, j int) bool { return list[i].Addr < list[j].Addr })
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ADDR\tZONE\tALIVE\tDRAINING\tMASTERS\tSLAVES\tTABLE\tLOAD\tHEALTH\tHELD")
			for _, n := range list {
				fmt.Fprintf(tw, "%s\t%s\t%v\t%v\t%d\t%d\t%d\t%.0f\t%s\t%d/%d\n", n.Addr, n.Zone, n.Alive, n.Draining, n.Masters, n.Slaves, n.TableVersion, n.Load,
					n.Health, n.HeldMasters, n.HeldSlaves)
			}
			return tw.Flush()
		},
	}
	migrations := &cobra.Command{
		Use: "migrations", Short: "show migrations with progress", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, cancel := ctx()
			defer cancel()
			var m wire.MigrationStatus
			if err := client().Get(c, "/v1/migrations", &m); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			pct := 100.0
			if m.Total > 0 {
				pct = 100 * float64(m.Completed) / float64(m.Total)
			}
			fmt.Fprintf(w, "progress %d/%d moves (%.1f%%), paused=%v\n", m.Completed, m.Total, pct, m.Paused)
			for _, r := range m.Running {
				fmt.Fprintf(w, "running bucket %d -> %s: %d keys sent, done=%v %s\n", r.Bucket, r.To, r.KeysSent, r.Done, r.Failed)
			}
			for _, p := range m.Pending {
				fmt.Fprintf(w, "pending bucket %d: %s -> %s\n", p.Bucket, p.From, p.To)
			}
			return nil
		},
	}
	admin := func(op, short string, nodeArg bool) *cobra.Command {
		use := op
		if nodeArg {
			use += " ADDR"
		}
		return &cobra.Command{
			Use: use, Short: short, Args: cobra.ExactArgs(map[bool]int{true: 1, false: 0}[nodeArg]),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, cancel := ctx()
				defer cancel()
				req := &wire.AdminRequest{Op: op}
				if nodeArg {
					req.Op = "node-" + op
					req.Node = args[0]
				}
				return printAdmin(cmd.OutOrStdout(), client(), c, req)
			},
		}
	}
	node := &cobra.Command{Use: "node", Short: "add, remove or drain a dataserver"}
	node.AddCommand(admin("add", "let a drained or removed dataserver hold copies again", true),
		admin("remove", "take a drained or dead dataserver out of the cluster", true),
		admin("drain", "move every copy off a dataserver (then remove it)", true))
	rebalance := &cobra.Command{
		Use: "rebalance", Short: "plan moves that rebalance the table", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, cancel := ctx()
			defer cancel()
			return printAdmin(cmd.OutOrStdout(), client(), c, &wire.AdminRequest{Op: "rebalance"})
		},
	}
	migrate := &cobra.Command{Use: "migrate", Short: "pause, resume or cancel migrations"}
	migrateShort := map[string]string{
		"pause":  "start no new moves (running ones finish)",
		"resume": "start the planned moves again",
		"cancel": "drop the plan and the running moves (the next change or rebalance plans again)",
	}
	for _, op := range []string{"pause", "resume", "cancel"} {
		op := op
		migrate.AddCommand(&cobra.Command{
			Use: op, Short: migrateShort[op], Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				c, cancel := ctx()
				defer cancel()
				return printAdmin(cmd.OutOrStdout(), client(), c, &wire.AdminRequest{Op: "migrations-" + op})
			},
		})
	}
	var quota, opsLimit, bytesLimit int64
	var readOnly bool
	area := &cobra.Command{Use: "area", Short: "per-area settings"}
	areaSet := &cobra.Command{
		Use: "set AREA", Short: "set an area's quota, flow limits and read-only switch", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := strconv.ParseUint(args[0], 10, 16)
			if err != nil || n > 1023 {
				return fmt.Errorf("area must be 0..1023")
			}
			c, cancel := ctx()
			defer cancel()
			return printAdmin(cmd.OutOrStdout(), client(), c, &wire.AdminRequest{Op: "area-set", Area: uint16(n),
				Config: wire.AreaConfig{QuotaBytes: quota, OpsLimit: opsLimit, BytesLimit: bytesLimit, ReadOnly: readOnly}})
		},
	}
	areaSet.Flags().Int64Var(&quota, "quota", 0, "byte quota (0 = none)")
	areaSet.Flags().Int64Var(&opsLimit, "ops", 0, "ops/s limit (0 = none)")
	areaSet.Flags().Int64Var(&bytesLimit, "bytes", 0, "bytes/s limit (0 = none)")
	areaSet.Flags().BoolVar(&readOnly, "read-only", false, "refuse writes")
	areaList := &cobra.Command{
		Use: "list", Short: "print every area's settings", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, cancel := ctx()
			defer cancel()
			var areas map[uint16]wire.AreaConfig
			if err := client().Get(c, "/v1/areas", &areas); err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(areas)
		},
	}
	area.AddCommand(areaSet, areaList)

	hooks := hooksCmd(client, ctx)

	rdb := func() *redis.Client {
		return redis.NewClient(&redis.Options{Addr: proxyAddr, Password: password, Protocol: 2})
	}
	stat := &cobra.Command{
		Use: "stat [AREA]", Short: "per-area statistics (TAIR.STAT)", Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, cancel := ctx()
			defer cancel()
			r := rdb()
			defer r.Close()
			a := []any{"tair.stat"}
			for _, s := range args {
				a = append(a, s)
			}
			res, err := r.Do(c, a...).Result()
			if err != nil {
				return err
			}
			printReply(cmd.OutOrStdout(), res)
			return nil
		},
	}
	shell := &cobra.Command{
		Use: "shell", Short: "tairclient-style shell: put/get/remove/incr/stat/delall, or any Redis command", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r := rdb()
			defer r.Close()
			return runShell(cmd.InOrStdin(), cmd.OutOrStdout(), r)
		},
	}
	cmd.AddCommand(status, table, nodes, migrations, node, rebalance, migrate, area, hooks, stat, shell)
	return cmd
}

// hooksCmd is `tair ctl hooks`: show, set, or switch on and off the
// dataservers' request hooks (applied without a restart).
func hooksCmd(client func() *wire.Client, ctx func() (context.Context, context.CancelFunc)) *cobra.Command {
	hooks := &cobra.Command{
		Use: "hooks", Short: "show the dataservers' request hooks (set, on, off change them)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, cancel := ctx()
			defer cancel()
			var st wire.HooksStatus
			if err := client().Get(c, "/v1/hooks", &st); err != nil {
				return err
			}
			enabled := wire.HookList(st.Enabled)
			if !st.Set {
				enabled += " (default)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "enabled  %s\nknown    %s\n", enabled, strings.Join(st.Known, ","))
			return nil
		},
	}
	op := func(use, short, op string) *cobra.Command {
		return &cobra.Command{
			Use: use, Short: short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, cancel := ctx()
				defer cancel()
				return printAdmin(cmd.OutOrStdout(), client(), c, &wire.AdminRequest{Op: op, Hooks: hookNames(args[0])})
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

func printAdmin(w io.Writer, cl *wire.Client, ctx context.Context, req *wire.AdminRequest) error {
	reply, err := cl.Admin(ctx, req)
	if err != nil {
		return err
	}
	if !reply.OK {
		return fmt.Errorf("%s", reply.Message)
	}
	fmt.Fprintln(w, "OK", reply.Message)
	return nil
}

// tairclient verbs mapped onto proxy commands.
var shellVerbs = map[string]string{
	"put": "tair.putv", "get": "tair.getv", "remove": "del", "incr": "tair.incr",
	"decr": "tair.decr", "stat": "tair.stat", "delall": "tair.delall",
}

func runShell(in io.Reader, out io.Writer, r *redis.Client) error {
	sc := bufio.NewScanner(in)
	area := 0
	prompt := func() { fmt.Fprintf(out, "tair[%d]> ", area) }
	prompt()
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			prompt()
			continue
		}
		verb := strings.ToLower(fields[0])
		switch verb {
		case "quit", "exit":
			return nil
		case "help":
			fmt.Fprintln(out, "put KEY VALUE [VERSION [EXPIRE]] | get KEY | remove KEY | incr KEY [N] | decr KEY [N] | stat | delall | area N | any Redis command")
			prompt()
			continue
		case "area":
			if len(fields) == 2 {
				if n, err := strconv.Atoi(fields[1]); err == nil {
					area = n
				}
			}
			prompt()
			continue
		}
		args := []any{}
		if m, ok := shellVerbs[verb]; ok {
			args = append(args, m)
			rest := fields[1:]
			switch verb {
			case "put":
				if len(rest) == 2 {
					rest = append(rest, "0")
				}
				if len(rest) == 4 {
					rest = []string{rest[0], rest[1], rest[2], "EX", rest[3]}
				}
			case "incr", "decr":
				if len(rest) == 1 {
					rest = append(rest, "1")
				}
			case "delall":
				rest = []string{strconv.Itoa(area)}
			case "stat":
				rest = []string{strconv.Itoa(area)}
			}
			for _, f := range rest {
				args = append(args, f)
			}
		} else {
			for _, f := range fields {
				args = append(args, f)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		// Each line runs on a pinned connection in the chosen area.
		conn := r.Conn()
		if area != 0 {
			conn.Do(ctx, "select", area)
		}
		res, err := conn.Do(ctx, args...).Result()
		conn.Close()
		cancel()
		switch {
		case err == redis.Nil:
			fmt.Fprintln(out, "(nil)")
		case err != nil:
			fmt.Fprintln(out, "(error)", err)
		default:
			printReply(out, res)
		}
		prompt()
	}
	return sc.Err()
}

func printReply(w io.Writer, v any) {
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			fmt.Fprintf(w, "%d) %v\n", i+1, e)
		}
	case map[any]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, fmt.Sprint(k))
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "%s: %v\n", k, x[k])
		}
	default:
		fmt.Fprintln(w, v)
	}
}
