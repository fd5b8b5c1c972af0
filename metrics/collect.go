package metrics

import (
	"context"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/repro-tools/repro/results"
)

// Report is what collecting a run's metrics cost and found, for run.json
// (extra "metrics").
type Report = results.MetricsReport

// StartScraping runs s into the folder's signals writer until the returned
// function is called, which waits for the last scrape and returns the
// scraper's counters.
func StartScraping(ctx context.Context, s *Scraper, folder *results.Folder, log *zap.Logger) (stop func() Stats, err error) {
	w, err := folder.SignalWriter()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	s.Log = log
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		failed := false
		if err := s.Run(sctx, func(sg results.Signal) {
			if err := w.Write(sg); err != nil && !failed {
				failed = true
				log.Error("writing signals failed; scraped metrics are no longer saved", zap.Error(err))
			}
		}); err != nil {
			log.Warn("the apiservers' metrics are not scraped", zap.Error(err))
		}
	}()
	return func() Stats {
		cancel()
		<-done
		return s.Stats()
	}, nil
}

// QueryInto reads queries over [start, end] from the Prometheus at address
// (through rt) into the folder's signals, returning what it cost and the
// queries that failed.
func QueryInto(ctx context.Context, folder *results.Folder, address string, rt http.RoundTripper, queries []Query, start, end time.Time, step time.Duration) (Cost, []error) {
	q, err := NewQuerier(address, rt)
	if err != nil {
		return Cost{}, []error{err}
	}
	sigs, cost, errs := q.Collect(ctx, queries, start, end, step)
	w, err := folder.SignalWriter()
	if err != nil {
		return cost, append(errs, err)
	}
	for _, s := range sigs {
		if err := w.Write(s); err != nil {
			return cost, append(errs, err)
		}
	}
	return cost, errs
}
