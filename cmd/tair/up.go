package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/configserver"
	"github.com/tairkv/tair/dataserver"
	"github.com/tairkv/tair/engines"
)

func upCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "up",
		Short: "run a whole cluster on this machine: etcd, a configserver, N dataservers and a proxy",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, err := settings(cmd)
			if err != nil {
				return err
			}
			log := newLogger(v, "up")
			engine := v.GetString("engine")
			dir := v.GetString("dir")
			if dir != "" {
				if dir, err = filepath.Abs(dir); err != nil {
					return err
				}
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return err
				}
			}
			token, err := upAdminToken(v.GetString("admin-token"), v.GetBool("no-admin-token"), dir)
			if err != nil {
				return err
			}
			opts := cluster.Options{
				Dir:         dir,
				DataServers: v.GetInt("dataservers"),
				Copies:      v.GetInt("copies"),
				Buckets:     uint32(v.GetInt("buckets")),
				Engine:      engine,
				Host:        v.GetString("host"),
				ProxyPort:   v.GetInt("port"),
				BasePort:    v.GetInt("base-port"),
				Log:         log,
				ConfigServer: func(_ int, c *configserver.Config) {
					c.Strategy = v.GetString("strategy")
					c.AdminToken = token
				},
				DataServer: func(_ int, c *dataserver.Config) {
					c.Sync = engines.SyncPolicy(v.GetString("sync"))
				},
			}
			if dir != "" && opts.BasePort == 0 {
				// A cluster kept on disk must find its nodes at the same
				// addresses when it is started again.
				opts.BasePort = 5100
			}
			if opts.DataServers < 1 {
				return fmt.Errorf("--dataservers must be at least 1")
			}
			// Signals wait for the cluster to be up, then stop it: one
			// that came while it started (or while its addresses were
			// written) would otherwise kill the process unclean.
			sigs := notifyStop()
			fmt.Fprintf(os.Stderr, "starting %d dataservers (engine %s, %d copies, %d buckets)...\n",
				opts.DataServers, engine, opts.Copies, opts.Buckets)
			c, err := cluster.Start(opts)
			if err != nil {
				return err
			}
			cs := c.ConfigServers[0]
			fmt.Printf("configserver  %s  (http %s, embedded etcd %v)\n", cs.Addr(), cs.HTTPAddr(), cs.EtcdEndpoints())
			if token != "" {
				fmt.Printf("console       http://%s/  (admin credential %s; tair ctl on this machine sends it itself)\n", cs.HTTPAddr(), token)
			}
			for i, ds := range c.DataServers {
				fmt.Printf("dataserver %d  %s  (http %s)\n", i, ds.Addr(), ds.HTTPAddr())
			}
			for _, p := range c.Proxies {
				fmt.Printf("proxy         %s  (http %s)\n", p.Addr(), p.HTTPAddr())
			}
			info := upInfo{PID: os.Getpid(), ConfigServers: c.ConfigServerAddrs(), Dir: c.Opts.Dir, AdminToken: token}
			if len(c.Proxies) > 0 {
				info.Proxy = c.Proxies[0].Addr()
			}
			removeInfo, err := writeUpInfo(info)
			if err != nil {
				// The cluster runs; only ctl's discovery of it is lost.
				log.Warn("tair ctl will not find this cluster without --configserver", "err", err)
			} else {
				defer removeInfo()
			}
			fmt.Printf("data in %s\nready: redis-cli -p %d   (Ctrl-C stops; tair ctl status finds it)\n", c.Opts.Dir, opts.ProxyPort)
			return stopOnSignal(log, sigs, c)
		},
	}
	addConfigFlag(cmd)
	f := cmd.Flags()
	f.Int("port", 6379, "proxy port")
	f.String("host", "127.0.0.1", "interface every part listens on")
	f.Int("dataservers", 3, "number of dataservers")
	f.Int("copies", 2, "copies of each bucket")
	f.String("engine", "rdb", "storage engine: mdb, rdb, ldb or kdb")
	f.String("dir", "", "data directory for etcd and persistent engines (temporary when empty)")
	f.Int("buckets", 1023, "number of buckets Q")
	f.String("strategy", "balance", "table strategy: balance or position-safe")
	f.String("sync", "group", "durability of persistent engines: always, group or none")
	f.String("admin-token", "", "admin credential for the operator's actions (tair ctl's and the console's); default: one made at the first start (kept in --dir when given) and written where tair ctl finds it")
	f.Bool("no-admin-token", false, "no admin credential: anyone who reaches the configserver may drain, add or remove nodes")
	f.Int("base-port", 0, "when set, stable ports: configserver BASE+8, dataserver i BASE+100+i (needed to restart on the same --dir)")
	return cmd
}

// upAdminToken is the admin credential of a `tair up` cluster: the one
// given, none when asked, else one made at random. A cluster kept in a
// directory keeps its credential there (0600), so a restart on the same
// --dir takes the same one and an operator's saved copy stays good.
func upAdminToken(given string, none bool, dir string) (string, error) {
	switch {
	case none && given != "":
		return "", fmt.Errorf("--admin-token and --no-admin-token: give one")
	case none:
		return "", nil
	case given != "":
		return given, nil
	}
	var path string
	if dir != "" {
		path = filepath.Join(dir, "admin-token")
		if b, err := os.ReadFile(path); err == nil {
			if tok := strings.TrimSpace(string(b)); tok != "" {
				return tok, nil
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(raw[:])
	if path != "" {
		if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
			return "", err
		}
	}
	return tok, nil
}
