package netproxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"testing"
	"time"
)

func echoServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// gate blocks upstream chunks while closed.
type gate struct{ open chan struct{} }

func (g *gate) Forward(ctx context.Context, dir Direction, _ int) error {
	if dir != Upstream {
		return nil
	}
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func TestForwardsAndHookCanStall(t *testing.T) {
	p, err := New("etcd", "127.0.0.1:0", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	c.Write([]byte("one\n"))
	if l, err := r.ReadString('\n'); err != nil || l != "one\n" {
		t.Fatalf("echo through proxy = %q, %v", l, err)
	}
	g := &gate{open: make(chan struct{})}
	p.SetHook(g)
	c.Write([]byte("two\n"))
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("a stalled link still answered")
	}
	close(g.open)
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if l, err := r.ReadString('\n'); err != nil || l != "two\n" {
		t.Fatalf("after release = %q, %v", l, err)
	}
}

func TestCloseEndsConnections(t *testing.T) {
	p, err := New("etcd", "127.0.0.1:0", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("x"))
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatal(err)
	}
	p.Close()
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Read(b); err == nil {
		t.Fatal("connection survived proxy Close")
	}
}
