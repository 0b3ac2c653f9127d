package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testutil"
)

var deltasSentRE = regexp.MustCompile(`(?m)^tair_configserver_tables_sent_total\{form="delta"\} (\d+)`)

// After a failover the dataservers and the proxy follow the new table
// versions as deltas, and each holds exactly the table the configserver
// serves.
func TestTablesFollowAsDeltas(t *testing.T) {
	c, err := Start(Options{DataServers: 3, Buckets: 64, Proxies: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WaitTable(3, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	cs := c.ConfigServers[0]
	deltasSent := func() int {
		body := testutil.HTTPGetOK(t, "http://"+cs.HTTPAddr()+"/metrics")
		m := deltasSentRE.FindStringSubmatch(body)
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	before := deltasSent()
	gone := c.DataServers[2].Addr()
	if err := c.StopDataServer(2); err != nil {
		t.Fatal(err)
	}
	encode := func(tb *route.Table) []byte {
		data, _ := json.Marshal(tb)
		return data
	}
	testutil.EventuallyErr(t, 15*time.Second, func() error {
		want := cs.Table()
		for b := range route.BucketID(want.Buckets) {
			if want.Master(b) == gone {
				return errors.New("the stopped node is still a master")
			}
		}
		held := map[string]*route.Table{"proxy": c.Proxies[0].Table()}
		for i, ds := range c.DataServers[:2] {
			held["dataserver "+strconv.Itoa(i)] = ds.Table()
		}
		for who, tb := range held {
			if tb == nil || !bytes.Equal(encode(tb), encode(want)) {
				return fmt.Errorf("%s holds another table than the configserver's version %d", who, want.Version)
			}
		}
		return nil
	})
	if got := deltasSent() - before; got < 3 {
		t.Fatalf("%d tables sent as deltas during the failover, want one to each of the proxy and the two dataservers at least", got)
	}
}
