package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tairkv/tair/internal/wire"
)

// hotkeysCmd is `tair ctl hotkeys [AREA]`: the cluster's hot keys, as the
// leading configserver merges the proxies' reports (GET /v1/hotkeys).
func hotkeysCmd(e *ctlEnv) *cobra.Command {
	return &cobra.Command{
		Use:   "hotkeys [AREA]",
		Short: "the cluster's hot keys: each proxy's hot keys of its last second, rates summed over the proxies",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			area := -1
			if len(args) == 1 {
				n, err := parseArea(args[0])
				if err != nil {
					return err
				}
				area = int(n)
			}
			var st wire.HotKeysStatus
			if err := e.getJSON(cmd, "/v1/hotkeys", &st); err != nil {
				return err
			}
			if area >= 0 {
				keys := []wire.ClusterHotKey{}
				for _, k := range st.Keys {
					if int(k.Area) == area {
						keys = append(keys, k)
					}
				}
				st.Keys = keys
			}
			return e.print(cmd, st, func(w io.Writer) error {
				if len(st.Keys) == 0 {
					_, err := fmt.Fprintf(w, "no hot keys (%d proxies reporting)\n", len(st.Proxies))
					return err
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "AREA\tKEY\tREQ/S\tPROXIES")
				for _, k := range st.Keys {
					fmt.Fprintf(tw, "%d\t%s\t%.0f\t%s\n", k.Area, strconv.Quote(k.Key), k.Rate, proxyRates(k.Proxies))
				}
				return tw.Flush()
			})
		},
	}
}

// proxyRates shows each proxy's rate: "addr=rate,addr=rate", sorted.
func proxyRates(m map[string]float64) string {
	parts := make([]string, 0, len(m))
	for p, r := range m {
		parts = append(parts, fmt.Sprintf("%s=%.0f", p, r))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
