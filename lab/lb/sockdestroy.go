package lb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// destroySocket aborts the TCP socket local<->remote in this network
// namespace (sock_diag SOCK_DESTROY, what `ss -K` sends; the kernel needs
// CONFIG_INET_DIAG_DESTROY). An aborted socket sends a reset to its peer
// (net/ipv4/tcp.c tcp_abort), which conntrack sees and translates like any
// packet of the flow: the peer is told at once, even when idle, and the
// flow's conntrack entry closes.
func destroySocket(local, remote netip.AddrPort) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	// nlmsghdr (16) + inet_diag_req_v2 (8 + inet_diag_sockid 48).
	const reqLen = 16 + 56
	b := make([]byte, reqLen)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], reqLen)
	ne.PutUint16(b[4:], unix.SOCK_DESTROY)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	ne.PutUint32(b[8:], 1)
	r := b[16:]
	r[0], r[1] = unix.AF_INET, unix.IPPROTO_TCP
	ne.PutUint32(r[4:], 0xffffffff) // every TCP state
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], local.Port())
	binary.BigEndian.PutUint16(id[2:], remote.Port())
	la, ra := local.Addr().As4(), remote.Addr().As4()
	copy(id[4:], la[:])
	copy(id[20:], ra[:])
	ne.PutUint32(id[40:], 0xffffffff) // INET_DIAG_NOCOOKIE
	ne.PutUint32(id[44:], 0xffffffff)
	if err := unix.Sendto(fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return err
	}
	if n < 20 || ne.Uint16(buf[4:]) != unix.NLMSG_ERROR {
		return fmt.Errorf("sock_diag: unexpected answer")
	}
	if code := int32(ne.Uint32(buf[16:])); code != 0 {
		return unix.Errno(-code)
	}
	return nil
}

// destroyUnsupported reports whether err means the kernel cannot destroy
// sockets (no CONFIG_INET_DIAG_DESTROY: net/core/sock_diag.c
// sock_diag_destroy answers EOPNOTSUPP; EPERM without CAP_NET_ADMIN).
func destroyUnsupported(err error) bool {
	return errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EPERM)
}

// socketGone reports whether err means the flow's socket no longer exists:
// ENOENT, or EINVAL when the lookup (established, then listening sockets)
// found only the port's listener, which is not aborted (measured here:
// EINVAL, the listener still accepting). Nothing is left to reset. Taking
// EINVAL for "cannot destroy" once switched a whole run to the mark
// fallback, whose reject never tells an idle client.
func socketGone(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINVAL)
}
