package attribute

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/results"
)

// FolderOptions configure CorrelateFolder.
type FolderOptions struct {
	// RequestTimeout is the apiservers' --request-timeout (Options).
	RequestTimeout time.Duration
	// Progress, when set, follows each audit log file read.
	Progress func(Progress)
	// Waiting, when set, is told before CorrelateFolder waits for requests
	// stalled at the end of the run to be logged, and for how long.
	Waiting func(wait time.Duration)
}

// FolderResult is what CorrelateFolder found and wrote.
type FolderResult struct {
	// Result is nil when the folder had no failed sample.
	*Result
	// Path is the attribution file written.
	Path string
	// Read is the bytes of audit log read.
	Read int64
}

// CorrelateFolder gives every failed sample of the results folder dir a
// verdict from the audit logs of the cluster cfg points at, over the run's
// window, and writes them to its attribution file. Right after a run it
// first waits for requests stalled at the run's end to be logged (within
// the request timeout), so that an absent request can be called not
// received.
func CorrelateFolder(ctx context.Context, cfg *rest.Config, dir string, o FolderOptions) (*FolderResult, error) {
	folder, err := results.Open(dir)
	if err != nil {
		return nil, err
	}
	out := &FolderResult{Path: folder.Path(results.AttributionFile)}
	failed, err := ReadFailed(folder.Path(results.SamplesFile))
	if err != nil {
		return nil, err
	}
	opts := Options{RequestTimeout: o.RequestTimeout, Progress: o.Progress}
	if run, err := folder.ReadRun(); err == nil {
		opts.From = run.Start
		if run.End != nil {
			opts.To = *run.End
		}
	}
	if opts.AnsweredBy, err = LBAnsweredBy(folder.Path(results.LBConnectionsFile)); err != nil {
		return nil, err
	}
	if len(failed) == 0 {
		return out, WriteRecords(out.Path, nil)
	}
	var latest time.Time
	for i := range failed {
		if e := failed[i].End(); failed[i].Phases.WroteRequest > 0 && e.After(latest) {
			latest = e
		}
	}
	if wait := time.Until(latest.Add(o.RequestTimeout)); wait > 0 && wait <= 2*o.RequestTimeout {
		if o.Waiting != nil {
			o.Waiting(wait)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
	src, err := NewNodeLogs(cfg)
	if err != nil {
		return nil, err
	}
	res, err := Correlate(ctx, src, failed, opts)
	if err != nil {
		return nil, fmt.Errorf("attribute: %w", err)
	}
	out.Result = res
	for _, l := range res.Logs {
		out.Read += l.Bytes
	}
	return out, WriteRecords(out.Path, res.Records)
}
