// Package netproxy is a small TCP proxy the lab puts between each apiserver
// and etcd. It forwards bytes faithfully; its Hook is the seam through which
// a fault model can stall or cut one apiserver's link to etcd while the rest
// of the control plane stays healthy (an apiserver that completes TLS and
// then cannot answer).
package netproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
)

// Direction is the way bytes flow through the proxy.
type Direction int

const (
	// Upstream is client (apiserver) to server (etcd).
	Upstream Direction = iota
	// Downstream is server to client.
	Downstream
)

// Hook is consulted before each chunk is forwarded. Returning nil forwards
// it; blocking delays it (a stalled link); an error closes the connection.
// The context ends when the connection or the proxy closes.
type Hook interface {
	Forward(ctx context.Context, dir Direction, n int) error
}

// Proxy forwards connections from a loopback listener to one address.
type Proxy struct {
	name   string
	to     string
	ln     net.Listener
	hook   atomic.Pointer[hookBox]
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

type hookBox struct{ h Hook }

// New listens on listen and forwards every connection to to.
func New(name, listen, to string) (*Proxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("%s proxy cannot listen on %s: %w", name, listen, err)
	}
	p := &Proxy{name: name, to: to, ln: ln, conns: map[net.Conn]struct{}{}}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's listening address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetHook installs h (nil removes it) for every chunk from now on,
// including on connections already open.
func (p *Proxy) SetHook(h Hook) {
	if h == nil {
		p.hook.Store(nil)
		return
	}
	p.hook.Store(&hookBox{h})
}

// Close stops the proxy and closes every connection through it.
func (p *Proxy) Close() error {
	p.cancel()
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if p.ctx.Err() != nil {
				return
			}
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	var d net.Dialer
	up, err := d.DialContext(p.ctx, "tcp", p.to)
	if err != nil {
		c.Close()
		return
	}
	p.track(c, true)
	p.track(up, true)
	ctx, cancel := context.WithCancel(p.ctx)
	var wg sync.WaitGroup
	pipe := func(dst, src net.Conn, dir Direction) {
		defer wg.Done()
		defer cancel()
		buf := make([]byte, 32<<10)
		for {
			n, rerr := src.Read(buf)
			if n > 0 {
				if hb := p.hook.Load(); hb != nil {
					if err := hb.h.Forward(ctx, dir, n); err != nil {
						return
					}
				}
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if rerr != nil {
				return
			}
		}
	}
	wg.Add(2)
	go pipe(up, c, Upstream)
	go pipe(c, up, Downstream)
	<-ctx.Done()
	// Either side ending ends both, as a TCP proxy between two peers that
	// never half-close (etcd's gRPC) should.
	c.Close()
	up.Close()
	wg.Wait()
	p.track(c, false)
	p.track(up, false)
}

// ErrCut may be returned by a Hook to close a connection.
var ErrCut = errors.New("connection cut by hook")
