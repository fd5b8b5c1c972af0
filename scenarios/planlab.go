package scenarios

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/repro-tools/repro/lab"
	"github.com/repro-tools/repro/lab/binaries"
	"github.com/repro-tools/repro/results"
)

// startLab starts the plan's lab, its load balancer recording every
// connection into the folder, and says so on Stdout.
func (p *Plan) startLab(ctx context.Context, folder *results.Folder) (*lab.Lab, error) {
	lp := p.Lab
	fmt.Fprintf(p.Stdout, "%s: starting the lab (%d real kube-apiservers behind an NLB-like load balancer; timing %s, probe timeout %v)\n", lp.Why, lp.Options.Nodes, lp.Options.Timing, p.Polling.ProbeTimeout)
	opts := lp.Options
	// The lab's process chatter goes to its own logger; builds show on Stderr.
	opts.Logger = lp.Logger
	opts.BuildProgress = p.Stderr
	opts.ConnRecords = folder.Path(results.LBConnectionsFile)
	started := time.Now()
	l, err := startLab(ctx, opts)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(p.Stdout, "lab is up in %s at %s (%s load balancer)\n", time.Since(started).Round(time.Millisecond), l.URL(), l.LBKind())
	return l, nil
}

// stopLab stops the lab at the end of the run; after an interrupt it says
// first why the exit waits.
func (p *Plan) stopLab(ctx context.Context, l *lab.Lab) {
	if ctx.Err() != nil {
		// One line: the teardown is the only wait left.
		fmt.Fprintf(p.Stderr, "repro: stopping the lab; its apiservers may take up to their grace period (%v) to exit (Ctrl-C again to exit at once)\n", l.Options().GracePeriod)
	}
	l.Stop()
}

// onLab points the session at the lab and keeps, before run.json is
// written for the last time, what the lab saw: its fault windows, its
// apiservers' logs and its load balancer's health records.
func (p *Plan) onLab(s *Session, l *lab.Lab, folder *results.Folder) {
	s.Target = Target{Config: l.RESTConfig(), Lab: labSettings(l, p.Lab.Sets)}
	s.BeforeFinish = func(run *results.Run) {
		// The load stops first (the pollers have), its outcomes kept with
		// each request's apiserver named while the LB's records are there.
		rec, err := l.KeepLoad(folder.Path(results.LoadFile))
		if err != nil {
			p.Log.Warn("could not keep the load's outcomes", zap.Error(err))
		}
		run.Extra.Load = rec
		// The fault windows the lab applied, to line up with the gaps.
		run.Extra.LabFaults = l.FaultEvents()
		if err := keepLabLogs(l, folder); err != nil {
			p.Log.Warn("could not copy the apiserver logs into the results", zap.Error(err))
		}
		if _, err := CopySignals(l.LBHealthPath(), folder); err != nil {
			p.Log.Warn("could not copy the load balancer's health records into the results", zap.Error(err))
		}
	}
}

// startLab starts the lab so that Ctrl-C aborts its start (a first build
// takes minutes) but not the running lab: on an interrupt the pollers must
// stop before the apiservers do, or the teardown itself would be measured as
// disruption. The caller stops the lab; if repro dies, the parent-death
// signal takes the lab's processes with it.
func startLab(ctx context.Context, opts lab.Options) (*lab.Lab, error) {
	labCtx, abort := context.WithCancel(context.WithoutCancel(ctx))
	started := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			abort()
		case <-started:
		}
	}()
	l, err := lab.Start(labCtx, opts)
	close(started)
	if err != nil {
		abort()
		return nil, err
	}
	go func() {
		<-l.Done()
		abort()
	}()
	return l, nil
}

// labSettings records the lab of a run for run.json; sets are the lab's
// changes as typed, so a fix run names itself.
func labSettings(l *lab.Lab, sets []string) *results.LabRecord {
	o := l.Options()
	return &results.LabRecord{
		Sets:  append([]string{}, sets...),
		Nodes: o.Nodes, KubeAPIServer: o.KubeAPIServer,
		Timing: o.Timing.Name, TimingFactor: o.Timing.Factor,
		Profile: o.Profile, Knobs: lab.Settings(o), LB: l.LBKind(),
		// The release as the binary reported it, and whether it is the
		// lab's default, so labels name a release only where it differs.
		KubeVersion: l.KubeVersion().String(), KubeDefault: l.KubeVersion().GitVersion == binaries.KubeAPIServer.Version && o.KubeAPIServer == "",
	}
}

// keepLabLogs copies every apiserver process's log into the results folder,
// before the lab's temporary directory (which also holds its keys) goes away.
func keepLabLogs(l *lab.Lab, f *results.Folder) error {
	dir := f.Path("apiserver-logs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, n := range l.Nodes() {
		for i, p := range n.Processes() {
			if err := copyFile(p.LogPath, filepath.Join(dir, fmt.Sprintf("%s-%d-revision-%d.log", n.Name(), i, p.Revision))); err != nil {
				return err
			}
		}
	}
	return nil
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
