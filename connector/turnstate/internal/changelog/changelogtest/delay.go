package changelogtest

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Delay makes the cluster answer every request d late, as a broker across
// a network does (a round trip, replication): each request waits on its
// own, and the cluster handles the others meanwhile.
func Delay(c *kfake.Cluster, d time.Duration) {
	var slept sync.Map // the requests waiting now
	c.Control(func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if _, again := slept.Load(req); again {
			return nil, nil, false
		}
		slept.Store(req, struct{}{})
		wake := time.Now().Add(d)
		c.SleepControl(func() { time.Sleep(time.Until(wake)) })
		slept.Delete(req)
		return nil, nil, false
	})
}
