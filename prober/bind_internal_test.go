//go:build unix

package prober

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestBindControlRecordsTheDialsOwnAddress: the address bindControl
// records before connect is the one the connection then has (the server
// sees it as the peer), so a dial that fails records the address its SYN
// was sent from.
func TestBindControlRecordsTheDialsOwnAddress(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	peers := make(chan string, 8)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			peers <- c.RemoteAddr().String()
			c.Close()
		}
	}()
	d := &net.Dialer{Timeout: time.Second, ControlContext: new(sourceAddrs).bindControl}
	for i := 0; i < 5; i++ {
		ts := &traceState{}
		c, err := d.DialContext(context.WithValue(context.Background(), traceKey{}, ts), "tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		local := c.LocalAddr().String()
		c.Close()
		if ts.dialLocal != local {
			t.Errorf("dial %d: recorded %q before connect, the connection's own address is %s", i, ts.dialLocal, local)
		}
		if peer := <-peers; peer != local {
			t.Errorf("dial %d: the server saw %s, the connection says %s", i, peer, local)
		}
	}
}
