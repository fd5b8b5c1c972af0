package lb

// The kernel load balancer: instead of accepting the client's connection and
// dialling the target, nftables rules DNAT the client's SYN to a target, so
// the target's own answer (SYN-ACK, a refusal, nothing) reaches the client,
// as through an AWS NLB, which passes the connection through (AWS Elastic
// Load Balancing docs, "How Elastic Load Balancing works": NLBs select a
// target by a flow hash and keep the flow on it). The health checker, the
// registration, the policies and the records are the proxy's.
//
// The rules live in a table of repro's own ("repro-lb") in the network
// namespace lab/netns made: everything of a lab run is local traffic on lo,
// so both chains hook OUTPUT.
//   - nat OUTPUT: tcp to the LB's address goes to pool[jhash(saddr . sport)
//     mod len(pool)], the in-service targets (Policy.pool: late routing,
//     fail open); conntrack keeps a flow on the target it was first sent to.
//   - filter OUTPUT: packets of flows sent to a blackholed target are
//     dropped (a SYN goes unanswered: a connect timeout), and packets of
//     flows marked for termination are rejected with a TCP reset.
// Both chains are rewritten in one netlink batch, atomically, whenever the
// pool or the blackholed set changes.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"github.com/ti-mo/conntrack"
	"github.com/ti-mo/netfilter"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/repro-tools/repro/results"
)

// KernelTable prefixes the nftables table each kernel LB owns, named
// after its port ("repro-lb-6443"). Two kernel LBs may share a namespace,
// but each sets conntrack's event mask off for flows not its own, so they
// lose each other's records: run one per namespace (repro run makes one).
const KernelTable = "repro-lb"

// Kinds of load balancer, as run.json and the summary name them.
const (
	KindProxy  = "proxy"
	KindKernel = "kernel"
)

// conntrack's TCP states (include/uapi/linux/netfilter/nf_conntrack_tcp.h).
const (
	ctTCPEstablished = 3
	ctTCPFinWait     = 4
	ctTCPCloseWt     = 5
	ctTCPLastAck     = 6
	ctTCPTimeWait    = 7
	ctTCPClose       = 8
)

// termMark is the conntrack mark of flows to the target at index i that are
// being terminated.
func termMark(i int) uint32 { return 0x7e570000 | uint32(i+1) }

type kernel struct {
	l    *LB
	vip  netip.AddrPort
	hold int // a bound, never-listening socket reserving the port
	nft  *nftables.Conn
	tbl  *nftables.Table
	nat  *nftables.Chain
	filt *nftables.Chain
	seed uint32

	ct     *conntrack.Conn // events
	ctq    *conntrack.Conn // dumps and updates: an event socket cannot send
	ctStop chan struct{}
	ctDone chan struct{}

	mu        sync.Mutex
	blackhole map[string]time.Time // target -> end of its drop window
	watching  map[string]bool      // stop watchers running
	flows     map[uint32]*conn     // conntrack id -> record
	timers    []*time.Timer
	lastRules string
	routed    map[string]bool // the pool the rules last written route to
	noDestroy atomic.Bool     // the kernel cannot destroy sockets
}

func newKernel(l *LB) (*kernel, error) {
	k := &kernel{l: l, seed: rand.Uint32(), blackhole: map[string]time.Time{}, watching: map[string]bool{}, flows: map[uint32]*conn{}, hold: -1}
	if err := k.reserve(l.opts.Listen); err != nil {
		return nil, err
	}
	var err error
	if k.nft, err = nftables.New(); err != nil {
		k.closeHold()
		return nil, fmt.Errorf("kernel load balancer: nftables: %w", err)
	}
	k.tbl = &nftables.Table{Name: fmt.Sprintf("%s-%d", KernelTable, k.vip.Port()), Family: nftables.TableFamilyIPv4}
	// A table left by a killed run in the same namespace goes first.
	k.nft.DelTable(k.tbl)
	_ = k.nft.Flush()
	k.nft.AddTable(k.tbl)
	k.nat = k.nft.AddChain(&nftables.Chain{Name: "nat-output", Table: k.tbl, Type: nftables.ChainTypeNAT, Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityNATDest})
	k.filt = k.nft.AddChain(&nftables.Chain{Name: "filter-output", Table: k.tbl, Type: nftables.ChainTypeFilter, Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityFilter})
	if err := k.nft.Flush(); err != nil {
		k.closeHold()
		return nil, fmt.Errorf("kernel load balancer: creating nftables table %s (needs CAP_NET_ADMIN in repro's network namespace): %w", k.tbl.Name, err)
	}
	// Byte counts for the records; per namespace, so only the lab's.
	_ = os.WriteFile("/proc/sys/net/netfilter/nf_conntrack_acct", []byte("1"), 0o644)
	if k.ct, err = conntrack.Dial(nil); err != nil {
		k.shut()
		return nil, fmt.Errorf("kernel load balancer: conntrack: %w", err)
	}
	if k.ctq, err = conntrack.Dial(nil); err != nil {
		k.shut()
		return nil, fmt.Errorf("kernel load balancer: conntrack: %w", err)
	}
	// Room for bursts (a sweep's many new connections at once); a lost
	// event loses a record, not the run.
	_ = k.ct.SetReadBuffer(4 << 20)
	_ = k.ct.SetOption(netlink.NoENOBUFS, true)
	evs := make(chan conntrack.Event, 4096)
	errs, err := k.ct.Listen(evs, 1, []netfilter.NetlinkGroup{netfilter.GroupCTNew, netfilter.GroupCTUpdate, netfilter.GroupCTDestroy})
	if err != nil {
		k.shut()
		return nil, fmt.Errorf("kernel load balancer: conntrack events: %w", err)
	}
	k.ctStop, k.ctDone = make(chan struct{}), make(chan struct{})
	go k.events(evs, errs)
	return k, nil
}

// reserve binds the LB's port on a socket that never listens: nothing else
// takes the port, and a SYN no rule sends on (no target registered) is
// refused, as by an NLB with no target.
func (k *kernel) reserve(listen string) error {
	ap, err := netip.ParseAddrPort(listen)
	if err != nil || !ap.Addr().Is4() {
		return fmt.Errorf("kernel load balancer address %q: want an IPv4 host:port such as 127.0.0.1:0", listen)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	sa := &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return fmt.Errorf("kernel load balancer cannot bind %s: %w", listen, err)
	}
	got, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return err
	}
	k.hold = fd
	k.vip = netip.AddrPortFrom(ap.Addr(), uint16(got.(*unix.SockaddrInet4).Port))
	return nil
}

func (k *kernel) closeHold() {
	if k.hold >= 0 {
		unix.Close(k.hold)
		k.hold = -1
	}
}

func (k *kernel) addr() string { return k.vip.String() }

func (k *kernel) kind() string { return KindKernel }

// close waits for the health checks (already cancelled) and then removes
// the rules, so that no check re-syncs them after.
func (k *kernel) close() error {
	k.l.wg.Wait()
	k.shut()
	return nil
}

// healthChangedLocked defers the kernel's part of a transition until l.mu
// is released: sync and terminate take it themselves.
func (k *kernel) healthChangedLocked(_ *target, st TargetState, action Action) func() {
	return func() { k.healthChanged(st, action) }
}

func (k *kernel) shut() {
	k.mu.Lock()
	for _, t := range k.timers {
		t.Stop()
	}
	k.mu.Unlock()
	if k.nft != nil {
		k.nft.DelTable(k.tbl)
		_ = k.nft.Flush()
	}
	if k.ctDone != nil {
		close(k.ctStop)
		<-k.ctDone
	}
	if k.ct != nil {
		_ = k.ct.Close()
	}
	if k.ctq != nil {
		_ = k.ctq.Close()
	}
	k.closeHold()
}

// pooler is implemented by the policies that know their routing pool; a
// kernel LB routes by the pool, not connection by connection.
type pooler interface {
	pool(targets []TargetState, now time.Time) []TargetState
}

// sync rewrites the rules from the LB's current state. Called without l.mu.
func (k *kernel) sync() {
	l := k.l
	// One writer at a time, each from the state it read: a sync that read
	// an older state must not write after a newer one.
	k.mu.Lock()
	defer k.mu.Unlock()
	now := time.Now()
	l.mu.Lock()
	states := l.statesLocked()
	var pool []TargetState
	if p, ok := l.policy.(pooler); ok {
		pool = p.pool(states, now)
	} else {
		pool = (&nlb{}).pool(states, now)
	}
	index := map[string]int{}
	for i, n := range l.order {
		index[n] = i
	}
	l.mu.Unlock()
	var dropped []string
	for name, end := range k.blackhole {
		if now.Before(end) {
			dropped = append(dropped, name)
		}
	}
	sort.Strings(dropped)
	names := make([]string, len(pool))
	for i, t := range pool {
		names[i] = t.Name
	}
	sig := fmt.Sprint(names, dropped)
	if sig == k.lastRules {
		return
	}
	k.nft.FlushChain(k.nat)
	k.nft.FlushChain(k.filt)
	k.eventMaskRules()
	for i, t := range pool {
		ap, err := netip.ParseAddrPort(t.Addr)
		if err != nil {
			continue
		}
		k.nft.AddRule(&nftables.Rule{Table: k.tbl, Chain: k.nat, Exprs: k.dnatRule(i, len(pool), ap)})
	}
	for _, name := range dropped {
		if ap, err := netip.ParseAddrPort(l.targets[name].Addr); err == nil {
			for _, off := range []uint32{2, 0} {
				k.nft.AddRule(&nftables.Rule{Table: k.tbl, Chain: k.filt, Exprs: k.toTarget(ap, off, &expr.Verdict{Kind: expr.VerdictDrop})})
			}
		}
	}
	for name, i := range index {
		k.nft.AddRule(&nftables.Rule{Table: k.tbl, Chain: k.filt, Exprs: []expr.Any{
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
			&expr.Ct{Key: expr.CtKeyMARK, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(termMark(i))},
			// Not the reset itself: it carries the flow's conntrack entry
			// (nf_ct_attach) and passes this chain too.
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 13, Len: 1},
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 1, Mask: []byte{0x04}, Xor: []byte{0}},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{0}},
			&expr.Reject{Type: unix.NFT_REJECT_TCP_RST},
		}, UserData: []byte("terminate " + name)})
	}
	if err := k.nft.Flush(); err != nil {
		l.log.Error("kernel load balancer: rewriting rules failed", zap.Error(err))
		return
	}
	k.lastRules = sig
	k.routed = map[string]bool{}
	for _, n := range names {
		k.routed[n] = true
	}
	l.log.Info("kernel load balancer rules", zap.Strings("pool", names), zap.Strings("blackholed", dropped))
}

// IPCT_* event bits (include/uapi/linux/netfilter/nf_conntrack_common.h).
const (
	ipctNew       = 1 << 0
	ipctDestroy   = 1 << 2
	ipctProtoInfo = 1 << 5
)

// eventMaskRules start the nat chain, which sees the first packet of every
// flow: conntrack reports only the LB's flows, and of those only what the
// records need (new, TCP state changes, destroy). The lab's other traffic
// (apiservers to etcd, health checks) would otherwise flood the event
// socket.
func (k *kernel) eventMaskRules() {
	vip := k.vip.Addr().As4()
	set := func(mask uint32, match ...expr.Any) {
		e := append(match,
			&expr.Immediate{Register: 1, Data: binaryutil.NativeEndian.PutUint32(mask)},
			&expr.Ct{Key: expr.CtKeyEVENTMASK, Register: 1, SourceRegister: true})
		k.nft.AddRule(&nftables.Rule{Table: k.tbl, Chain: k.nat, Exprs: e})
	}
	set(0, &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{unix.IPPROTO_TCP}})
	set(0, &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: vip[:]})
	set(0, &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: binaryutil.BigEndian.PutUint16(k.vip.Port())})
	set(ipctNew|ipctDestroy|ipctProtoInfo, &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(k.vip.Port())})
}

// dnatRule sends tcp to the VIP whose flow hash mod n is i to target.
func (k *kernel) dnatRule(i, n int, target netip.AddrPort) []expr.Any {
	vip := k.vip.Addr().As4()
	taddr := target.Addr().As4()
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: vip[:]},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(k.vip.Port())},
		// saddr . sport in consecutive 32-bit registers (NFT_REG32_00 = 8),
		// hashed together: the flow's source, as an NLB's flow hash.
		&expr.Payload{DestRegister: 8, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
		&expr.Payload{DestRegister: 9, Base: expr.PayloadBaseTransportHeader, Offset: 0, Len: 2},
		&expr.Hash{SourceRegister: 8, DestRegister: 1, Length: 6, Modulus: uint32(n), Seed: k.seed, Type: expr.HashTypeJenkins},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(uint32(i))},
		&expr.Immediate{Register: 1, Data: taddr[:]},
		&expr.Immediate{Register: 2, Data: binaryutil.BigEndian.PutUint16(target.Port())},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegProtoMin: 2, Specified: true},
	}
}

// toTarget matches the packets of flows the LB sent to target (their
// original destination is the VIP), one direction each: offset 2 matches
// the client's packets (destination port, already DNATed in this chain),
// offset 0 the target's (source port, not yet translated back, which
// happens at POSTROUTING). A ct expression with the reply direction would
// say it in one rule, but google/nftables v0.3.0 sends NFTA_CT_DIRECTION
// as 32 bits where the kernel reads 8 (net/netfilter/nft_ct.c), so the
// direction always reads as original.
func (k *kernel) toTarget(target netip.AddrPort, portOffset uint32, verdict expr.Any) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
		&expr.Ct{Key: expr.CtKeyPROTODST, Register: 1, Direction: 0},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(k.vip.Port())},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: portOffset, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(target.Port())},
		verdict,
	}
}

// routes reports whether the rules route new flows to the target.
func (k *kernel) routes(name string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.routed[name]
}

// terminate resets every established flow to the target, as an NLB's
// connection termination does: it aborts the target's end of each flow
// (destroySocket), whose reset reaches the client at once. Where the kernel
// cannot destroy sockets it marks the flows' conntrack entries instead, and
// the filter chain rejects their next packet with a reset; a marked entry
// is not closed by that reset (it does not pass conntrack), so a client
// port reused on it within its timeout is refused: the fallback is cruder.
// Called after sync took the target out of the pool.
func (k *kernel) terminate(name string) (destroyed, marked int) {
	l := k.l
	l.mu.Lock()
	t := l.targets[name]
	idx := -1
	for i, n := range l.order {
		if n == name {
			idx = i
		}
	}
	l.mu.Unlock()
	ap, err := netip.ParseAddrPort(t.Addr)
	if err != nil || idx < 0 {
		return 0, 0
	}
	flows, err := k.ctq.Dump(nil)
	if err != nil {
		l.log.Warn("kernel load balancer: listing conntrack flows failed", zap.Error(err))
		return 0, 0
	}
	for _, f := range flows {
		if !k.ours(f) || f.TupleReply.Proto.SourcePort != ap.Port() || f.TupleReply.IP.SourceAddress != ap.Addr() {
			continue
		}
		if f.ProtoInfo.TCP != nil && f.ProtoInfo.TCP.State >= ctTCPTimeWait {
			continue
		}
		client := netip.AddrPortFrom(f.TupleOrig.IP.SourceAddress, f.TupleOrig.Proto.SourcePort)
		k.mu.Lock()
		if c := k.flows[f.ID]; c != nil {
			c.terminating.Store(true)
		}
		k.mu.Unlock()
		if !k.noDestroy.Load() {
			err := destroySocket(ap, client)
			if err == nil || socketGone(err) {
				k.forget(f)
				destroyed++
				continue
			}
			if destroyUnsupported(err) {
				k.noDestroy.Store(true)
				l.log.Info("kernel load balancer: this kernel cannot destroy sockets; terminating by conntrack mark and reject", zap.Error(err))
			} else {
				// The mark's reject answers the next packet's sender only:
				// an idle client is not told. Say so where it happens.
				l.log.Warn("kernel load balancer: aborting a flow's target socket failed; marking it instead", zap.String("client", client.String()), zap.Error(err))
			}
		}
		if err := k.ctq.Update(conntrack.Flow{TupleOrig: f.TupleOrig, TupleReply: f.TupleReply, Mark: termMark(idx)}); err != nil {
			l.log.Warn("kernel load balancer: marking a flow for termination failed", zap.Error(err))
			continue
		}
		marked++
	}
	return destroyed, marked
}

// forget deletes a terminated flow's conntrack entry, as an NLB forgets a
// flow it terminated. Left alone, conntrack keeps the reset flow for ten
// seconds (nf_conntrack_tcp_timeout_close), and a SYN on it from the
// client's side passes on the old entry, to the old target, unrecorded:
// the kernel reopens a closed entry only when the client side closed or
// reset it (tcp_packet in net/netfilter/nf_conntrack_proto_tcp.c), and
// here the target's side sent the reset. The reset itself was translated
// on the way out, before the abort returned. The flow's record keeps the
// LB's verdict: the reset's update event comes before the deletion's.
func (k *kernel) forget(f conntrack.Flow) {
	err := k.ctq.Delete(conntrack.Flow{TupleOrig: f.TupleOrig, TupleReply: f.TupleReply})
	if err != nil && !errors.Is(err, unix.ENOENT) {
		k.l.log.Warn("kernel load balancer: forgetting a terminated flow failed; a client reusing its port may reach the old target", zap.Error(err))
	}
}

func (k *kernel) ours(f conntrack.Flow) bool {
	return f.TupleOrig.Proto.Protocol == unix.IPPROTO_TCP && f.TupleOrig.IP.DestinationAddress == k.vip.Addr() && f.TupleOrig.Proto.DestinationPort == k.vip.Port()
}

// startBlackhole opens the target's drop window (the policy decides its
// end) and rewrites the rules, again when it ends.
func (k *kernel) startBlackhole(name string, end time.Time) {
	k.mu.Lock()
	if old, ok := k.blackhole[name]; ok && !old.Before(end) {
		k.mu.Unlock()
		return
	}
	k.blackhole[name] = end
	k.mu.Unlock()
	k.l.log.Info("kernel load balancer: dropping packets to a stopped target", zap.String("target", name), zap.Time("until", end))
	k.sync()
	k.after(time.Until(end)+time.Millisecond, k.sync)
}

// after runs f after d unless the LB closes first.
func (k *kernel) after(d time.Duration, f func()) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.timers = append(k.timers, time.AfterFunc(d, func() {
		if !k.l.closed.Load() {
			f()
		}
	}))
}

// watchStop looks for the moment an unhealthy target stops listening (its
// port refuses a connect), the signal that starts a blackhole window: the
// proxy sees it on its own dial, the kernel LB by asking every 5 ms (a SYN
// routed there in between is refused: about one in a blackhole run at 20 ms).
func (k *kernel) watchStop(name string, bh interface {
	blackholeUntil(TargetState, time.Time) time.Time
}) {
	k.mu.Lock()
	if k.watching[name] {
		k.mu.Unlock()
		return
	}
	k.watching[name] = true
	k.mu.Unlock()
	l := k.l
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer func() { k.mu.Lock(); delete(k.watching, name); k.mu.Unlock() }()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			st := l.stateOf(name)
			if st.Healthy {
				return
			}
			d := net.Dialer{Timeout: 100 * time.Millisecond}
			c, err := d.DialContext(l.ctx, "tcp", st.Addr)
			if err == nil {
				_ = c.Close()
			} else if errors.Is(err, syscall.ECONNREFUSED) {
				if end := bh.blackholeUntil(st, time.Now()); !end.IsZero() {
					k.startBlackhole(name, end)
				}
				return
			}
			select {
			case <-l.ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
}

// healthChanged is the kernel LB's part of a health transition.
func (k *kernel) healthChanged(st TargetState, action Action) {
	if st.Healthy {
		// As the proxy's policy: a target back in health is not dropped.
		k.mu.Lock()
		delete(k.blackhole, st.Name)
		k.mu.Unlock()
		k.sync()
		return
	}
	k.sync()
	if action == ActionReset {
		d, m := k.terminate(st.Name)
		k.l.log.Info("kernel load balancer: terminating connections to an unhealthy target", zap.String("target", st.Name), zap.Int("reset", d), zap.Int("marked", m))
	}
	if f, ok := k.l.policy.(*faulty); ok {
		if f.f.LateDeregistration > 0 {
			k.after(f.f.LateDeregistration+time.Millisecond, k.sync)
		}
		if f.f.Blackhole > 0 {
			k.watchStop(st.Name, f)
		}
	}
}

// events turns conntrack events of flows to the VIP into connection
// records: NEW opens one, the first closing state (or DESTROY) closes it.
func (k *kernel) events(evs chan conntrack.Event, errs chan error) {
	defer close(k.ctDone)
	for {
		select {
		case <-k.ctStop:
			return
		case ev, ok := <-evs:
			if !ok {
				return
			}
			if ev.Flow != nil && k.ours(*ev.Flow) {
				k.event(ev)
			}
		case err := <-errs:
			if err != nil && !k.l.closed.Load() {
				k.l.log.Warn("kernel load balancer: conntrack events", zap.Error(err))
			}
		}
	}
}

func (k *kernel) event(ev conntrack.Event) {
	l := k.l
	f := ev.Flow
	now := time.Now()
	k.mu.Lock()
	c := k.flows[f.ID]
	if c == nil && ev.Type == conntrack.EventNew {
		c = &conn{rec: ConnRecord{ID: l.nextID.Add(1), Action: ActionForward, Opened: now,
			Client: netip.AddrPortFrom(f.TupleOrig.IP.SourceAddress, f.TupleOrig.Proto.SourcePort).String()}}
		target := netip.AddrPortFrom(f.TupleReply.IP.SourceAddress, f.TupleReply.Proto.SourcePort).String()
		l.mu.Lock()
		for _, n := range l.order {
			if t := l.targets[n]; t.Addr == target {
				c.rec.Target, c.rec.TargetAddr = t.Name, t.Addr
				t.active[c] = struct{}{}
			}
		}
		l.conns = append(l.conns, c)
		l.byClient[c.rec.Client] = append(l.byClient[c.rec.Client], c)
		l.mu.Unlock()
		k.flows[f.ID] = c
		k.mu.Unlock()
		l.emit("open", c.snapshot())
		return
	}
	if c == nil {
		k.mu.Unlock()
		return
	}
	state := uint8(0)
	if f.ProtoInfo.TCP != nil {
		state = f.ProtoInfo.TCP.State
	}
	if state == ctTCPEstablished {
		c.active.Store(now.UnixNano())
	}
	by, errText := "", ""
	switch {
	case ev.Type == conntrack.EventDestroy:
		by = "lb"
	case state == ctTCPClose:
		// conntrack does not say who sent a reset: only the flows this LB
		// terminated are its verdicts; a client closing with unread data
		// or a target aborting are not.
		by = "peer-reset"
		if f.Mark != 0 || c.terminating.Load() {
			by, errText = "reset", "target turned unhealthy"
		}
	case state == ctTCPFinWait:
		by = "client"
	case state == ctTCPCloseWt, state == ctTCPLastAck:
		by = "target"
	case state == ctTCPTimeWait:
		by = "client"
	}
	if ev.Type == conntrack.EventDestroy {
		delete(k.flows, f.ID)
	}
	k.mu.Unlock()
	if ev.Type == conntrack.EventDestroy {
		c.mu.Lock()
		c.rec.BytesUp, c.rec.BytesDown = int64(f.CountersOrig.Bytes), int64(f.CountersReply.Bytes)
		c.mu.Unlock()
	}
	if by == "" {
		return
	}
	c.mu.Lock()
	if !c.rec.Closed.IsZero() {
		c.mu.Unlock()
		return
	}
	if c.active.Load() == 0 && (by == "reset" || by == "peer-reset" || by == "lb") {
		// Ended before the handshake completed: the client's dial failed.
		// Reset, or destroyed with the target's answer counted (its RST),
		// the target refused it; destroyed with nothing from the target,
		// the SYN went unanswered. A dial's flow is the one record a client
		// whose dial failed can be matched to, so it is told apart here.
		by, errText = results.LBClosedByDial, "connection refused"
		if ev.Type == conntrack.EventDestroy && f.CountersReply.Bytes == 0 {
			errText = "no answer"
		}
	}
	c.rec.Closed, c.rec.ClosedBy, c.rec.Error = now, by, errText
	c.mu.Unlock()
	l.mu.Lock()
	if t := l.targets[c.rec.Target]; t != nil {
		delete(t.active, c)
	}
	l.mu.Unlock()
	l.emit("close", c.snapshot())
}

// kindOf names the LB kind for the record.
func (l *LB) kindOf() string { return l.path.kind() }

// Kind is KindKernel for the kernel LB, KindProxy for the Go proxy.
func (l *LB) Kind() string { return l.kindOf() }
