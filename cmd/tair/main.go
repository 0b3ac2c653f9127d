// Command tair is the one binary of the cluster: `tair up` runs a whole
// cluster on one machine; `tair configserver|dataserver|proxy` run one role;
// `tair ctl` administers a running cluster. Configuration comes from
// --config FILE (YAML), TAIR_* environment variables and flags, in
// increasing precedence, read with viper here and nowhere else.
package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

func main() {
	root := &cobra.Command{
		Use:           "tair",
		Short:         "Tair: a distributed key/value store behind Redis-protocol proxies",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(upCmd(), configserverCmd(), dataserverCmd(), proxyCmd(), ctlCmd())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "tair:", err)
		os.Exit(1)
	}
}

// settings reads one subcommand's configuration: defaults (the flags'),
// then --config FILE, then TAIR_* environment variables, then flags that
// were set on the command line.
func settings(cmd *cobra.Command) (*viper.Viper, error) {
	v := viper.New()
	v.SetEnvPrefix("TAIR")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	var bindErr error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "config" {
			return
		}
		if err := v.BindPFlag(f.Name, f); err != nil {
			bindErr = err
		}
	})
	if bindErr != nil {
		return nil, bindErr
	}
	if file, _ := cmd.Flags().GetString("config"); file != "" {
		v.SetConfigFile(file)
		if err := v.ReadInConfig(); err != nil {
			return nil, fmt.Errorf("config %s: %w", file, err)
		}
		// Unknown keys in the file are an error, not a silent no-op.
		for _, k := range v.AllKeys() {
			if cmd.Flags().Lookup(k) == nil && v.InConfig(k) {
				return nil, fmt.Errorf("config %s: unknown setting %q", file, k)
			}
		}
	}
	return v, nil
}

func addConfigFlag(cmd *cobra.Command) {
	cmd.Flags().String("config", "", "YAML config file (TAIR_* env vars and flags override it)")
	cmd.Flags().String("log-level", "info", "log level: debug, info, warn, error")
}

func newLogger(v *viper.Viper, component string) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(v.GetString("log-level"))); err != nil {
		level = slog.LevelInfo
	}
	h := slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})
	return slog.New(h).With("component", component)
}

// splitList splits "a,b" flag values.
func splitList(s []string) []string {
	var out []string
	for _, e := range s {
		for _, p := range strings.Split(e, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

type closer interface{ Close() error }

// shutdownGrace bounds a clean stop: a role's Close waits for its event
// loops and connections, and a loop wedged in a command (a bug, a stuck
// engine) would hold it for ever. Past the grace the process exits
// anyway, as if killed: nothing unacknowledged is lost (a persistent
// engine restarts as after a crash), and whoever sent SIGTERM (an
// orchestrator, `tair up`'s user) gets the process gone within 5 s.
var shutdownGrace = 4 * time.Second

// runUntilSignal waits for SIGINT or SIGTERM, then closes the parts in
// order. A second signal exits at once; a stop that takes longer than
// shutdownGrace exits too (status 1).
func runUntilSignal(log *slog.Logger, parts ...closer) error {
	return stopOnSignal(log, notifyStop(), parts...)
}

// notifyStop starts catching SIGINT and SIGTERM: from then on a signal
// waits for stopOnSignal instead of killing the process, so a role that
// takes a while to start calls it first.
func notifyStop() chan os.Signal {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	return sigs
}

// stopOnSignal waits for a signal on sigs (from notifyStop), then closes
// parts within shutdownGrace; a second signal exits at once.
func stopOnSignal(log *slog.Logger, sigs chan os.Signal, parts ...closer) error {
	defer signal.Stop(sigs)
	sig := <-sigs
	log.Info("stopping", "signal", sig.String(), "grace", shutdownGrace)
	done := make(chan error, 1)
	go func() {
		var errList []error
		for _, p := range parts {
			if err := p.Close(); err != nil {
				errList = append(errList, err)
			}
		}
		done <- errors.Join(errList...)
	}()
	grace := time.NewTimer(shutdownGrace)
	defer grace.Stop()
	select {
	case err := <-done:
		return err
	case sig := <-sigs:
		log.Warn("second signal: exiting at once", "signal", sig.String())
		os.Exit(exitStatus(sig))
	case <-grace.C:
		log.Error("the stop did not finish within its grace period; exiting", "grace", shutdownGrace)
		os.Exit(1)
	}
	return nil
}

// exitStatus is a shell's status for a process killed by sig.
func exitStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}
