package prober

import (
	"net"
	"net/netip"
	"sync"
)

// WithBoundDials binds each dial's socket to its source address and an
// ephemeral port before it connects, so that a dial that fails before any
// connection exists (refused, or its SYN unanswered) still records the
// local address it was sent from. net/http's dial reports no address for
// such a failure: the kernel picks the port inside connect(2), and Go
// closes the socket before returning the error.
//
// The lab turns it on: its kernel load balancer passes each SYN to a
// target and records every flow by client address, refused ones included,
// and that address is the only thing that ties a refused request to the
// apiserver it was sent to ("served by"). A live run has no such records
// and dials as net/http does.
func WithBoundDials(on bool) Option {
	return func(c *config) {
		c.sources = nil
		if on {
			c.sources = &sourceAddrs{}
		}
	}
}

// sourceAddrs caches the source address the kernel's routing picks for a
// remote address: a connected UDP socket learns it without sending a
// packet. The pollers of one prober dial a handful of addresses.
type sourceAddrs struct {
	mu  sync.Mutex
	src map[netip.Addr]netip.Addr
}

func (s *sourceAddrs) of(remote netip.Addr) (netip.Addr, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.src[remote]; ok {
		return a, nil
	}
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(remote, 9)))
	if err != nil {
		return netip.Addr{}, err
	}
	defer c.Close()
	a := c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap()
	if s.src == nil {
		s.src = map[netip.Addr]netip.Addr{}
	}
	s.src[remote] = a
	return a, nil
}
