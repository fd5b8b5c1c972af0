package scenarios

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/repro-tools/repro/awslb"
	"github.com/repro-tools/repro/results"
)

// awsDiscoverTimeout bounds finding the cluster's target groups.
const awsDiscoverTimeout = 60 * time.Second

// prepareAWSLB finds the cluster's API target groups before anything
// changes, so that a missing credential or permission stops the run with
// one line instead of a run without the load balancer's view.
func (s *Session) prepareAWSLB(ctx context.Context, p *prepared) error {
	if !s.Polling.AWSLB {
		return nil
	}
	if !s.Target.Live {
		return errors.New("--aws-lb reads a live AWS cluster's load balancers; the lab records its own load balancer's health in every run: drop --aws-lb")
	}
	infra, err := p.clients.Config.ConfigV1().Infrastructures().Get(ctx, "cluster", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("--aws-lb needs the Infrastructure (infrastructures.config.openshift.io/cluster): %w", err)
	}
	cl, err := awslb.FromInfrastructure(infra)
	if err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, awsDiscoverTimeout)
	defer cancel()
	api, err := awslb.NewClient(dctx, cl.Region)
	if err != nil {
		return err
	}
	groups, err := awslb.Discover(dctx, api, cl.InfraID)
	if err != nil {
		return err
	}
	for _, g := range groups {
		if !g.Owned {
			s.Log.Warn("an API target group lacks the cluster's ownership tag; polled anyway", zap.String("targetGroup", g.Name), zap.String("tag", "kubernetes.io/cluster/"+cl.InfraID))
		}
	}
	poller := &awslb.Poller{API: api, Groups: groups, Log: s.Log.Named("aws-lb")}
	// Records name nodes as the rollout does; without the list they name
	// instance IDs.
	if nodes, err := p.clients.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "node-role.kubernetes.io/master"}); err == nil {
		poller.Names = awslb.NodeNames(nodes.Items)
	} else {
		s.Log.Warn("could not list the control-plane nodes; load balancer records name instance IDs", zap.Error(err))
	}
	p.awslb = poller
	p.run.Extra.AWSLB = &results.AWSLBRecord{InfrastructureName: cl.InfraID, Region: cl.Region, TargetGroups: groups}
	return nil
}

// startEvidence starts what runs beside the pollers: the control pollers
// and, with --aws-lb, the target health poller. The returned function stops
// them and writes what they found into folder and run.
func (s *Session) startEvidence(ctx context.Context, p *prepared, folder *results.Folder) func(*results.Run) {
	ectx, stop := context.WithCancel(ctx)
	// Every source writes signals.jsonl through the folder's one writer,
	// so their lines never interleave.
	var signals *results.JSONLWriter
	emit := func(sig results.Signal) {
		if signals == nil {
			w, err := folder.SignalWriter()
			if err != nil {
				s.Log.Warn("cannot write the run's signals", zap.Error(err))
				return
			}
			signals = w
		}
		if err := signals.Write(sig); err != nil {
			s.Log.Warn("writing the run's signals failed", zap.Error(err))
		}
	}
	var awsDone chan awslb.Stats
	if p.awslb != nil {
		// The poller's goroutine is the only caller of emit until it
		// returns; the control windows are written after that.
		p.awslb.Emit = emit
		awsDone = make(chan awslb.Stats, 1)
		go func() { awsDone <- p.awslb.Run(ectx) }()
	}
	var waitControl func() ([]results.Signal, error)
	ctl, err := newControl(s.Polling, s.Polling.Control, nil, s.Log.Named("control"))
	if err != nil {
		s.Log.Warn("the control poller did not start; the run cannot tell a stall of this host from the cluster's", zap.Error(err))
	} else {
		waitControl = ctl.run(ectx, folder.Path(results.ControlFile), DefaultStallThreshold)
	}
	return func(run *results.Run) {
		stop()
		if awsDone != nil {
			st := <-awsDone
			run.Extra.AWSLBPolling = &st
		}
		if waitControl != nil {
			sigs, err := waitControl()
			if err != nil {
				s.Log.Warn("writing the control samples failed", zap.Error(err))
			}
			for _, sig := range sigs {
				emit(sig)
			}
			n := len(sigs)
			run.Extra.MeasuringUnreliableWindows = &n
			run.Extra.ControlStallThreshold = results.Duration(DefaultStallThreshold)
		}
	}
}
