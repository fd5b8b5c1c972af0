package prober_test

import (
	"context"
	"net"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/results"
)

// TestResetBeforeTLSKeepsLocalAddr checks that a connection reset during the
// TLS handshake, before net/http hands the connection to the request, still
// records the local address: it is what ties the sample to a load balancer's
// record of where that connection went (the lab's pass-through LB resets a
// client whose target refused it).
func TestResetBeforeTLSKeepsLocalAddr(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan string, 64)
	served := make(chan struct{})
	go func() {
		defer close(served)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c.RemoteAddr().String()
			// Read the ClientHello, then reset: the client is mid-handshake.
			buf := make([]byte, 512)
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			_, _ = c.Read(buf)
			_ = c.(*net.TCPConn).SetLinger(0)
			_ = c.Close()
		}
	}()
	p, err := prober.New(&rest.Config{Host: "https://" + ln.Addr().String(), TLSClientConfig: rest.TLSClientConfig{Insecure: true}},
		prober.WithBackends(kubeAPI(t)...),
		prober.WithConnectionTypes(results.NewConnections),
		prober.WithInterval(50*time.Millisecond),
		prober.WithProbeTimeout(time.Second),
		prober.WithDuration(150*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	got := collect(p.Run(context.Background()))
	clients := map[string]bool{}
	ln.Close()
	<-served
	close(accepted)
	for a := range accepted {
		clients[a] = true
	}
	n := 0
	for _, ss := range got {
		for _, s := range ss {
			n++
			if s.ErrorClass == results.ClassNone {
				t.Fatalf("seq %d succeeded against a server that resets every handshake", s.Seq)
			}
			if s.LocalAddr == "" || !clients[s.LocalAddr] {
				t.Errorf("seq %d (%s: %s): local address %q is not one the server saw (%v)", s.Seq, s.ErrorClass, s.Error, s.LocalAddr, clients)
			}
		}
	}
	if n == 0 {
		t.Fatal("no samples")
	}
}
