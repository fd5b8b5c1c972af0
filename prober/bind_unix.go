//go:build unix

package prober

import (
	"context"
	"fmt"
	"net/netip"
	"syscall"
)

// bindControl is a net.Dialer ControlContext that binds the socket to the
// route's source address and a port the kernel picks, and records that
// address in the traceState of the request that started the dial. A
// failure to bind leaves the dial as it was (connect picks the port): the
// address is then not recorded, nothing else changes.
func (s *sourceAddrs) bindControl(ctx context.Context, network, address string, rc syscall.RawConn) error {
	if network != "tcp4" && network != "tcp6" {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return nil
	}
	src, err := s.of(ap.Addr().Unmap())
	if err != nil {
		return nil
	}
	var local string
	cerr := rc.Control(func(fd uintptr) {
		if err := syscall.Bind(int(fd), sockaddr(src, network)); err != nil {
			return
		}
		sa, err := syscall.Getsockname(int(fd))
		if err != nil {
			return
		}
		switch sa := sa.(type) {
		case *syscall.SockaddrInet4:
			local = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port)).String()
		case *syscall.SockaddrInet6:
			local = netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(sa.Port)).String()
		}
	})
	if cerr != nil {
		return fmt.Errorf("binding the dial to %s: %w", src, cerr)
	}
	if ts, ok := ctx.Value(traceKey{}).(*traceState); ok && local != "" {
		ts.mu.Lock()
		ts.dialLocal, ts.dialRemote = local, address
		ts.mu.Unlock()
	}
	return nil
}

// sockaddr is src with port 0 in the socket's family.
func sockaddr(src netip.Addr, network string) syscall.Sockaddr {
	if network == "tcp6" {
		return &syscall.SockaddrInet6{Addr: src.As16()}
	}
	return &syscall.SockaddrInet4{Addr: src.As4()}
}
