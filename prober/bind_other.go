//go:build !unix

package prober

import (
	"context"
	"syscall"
)

// bindControl leaves the dial as it is where sockets are not unix file
// descriptors: no local address is recorded for a failed dial.
func (s *sourceAddrs) bindControl(context.Context, string, string, syscall.RawConn) error { return nil }
