package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"go.uber.org/zap"
	"golang.org/x/term"
	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/attribute"
	"github.com/repro-tools/repro/report/write"
	"github.com/repro-tools/repro/results"
)

func init() { subcommands = append(subcommands, newAttributeCmd) }

func newAttributeCmd(o *rootOptions) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "attribute DIR",
		Short: "Say where each failed request of a run went, from the control-plane nodes' audit logs",
		Long: `Read the audit logs of kube-apiserver, openshift-apiserver and oauth-apiserver on
every control-plane node of the cluster named with --kubeconfig, --context or
--server, through the node logs API (what "oc adm node-logs --path=kube-apiserver/"
reads, rotated files included), and give every failed sample of the results
folder DIR a verdict:

  answered               a response is logged at or before the client gave up
  received-not-answered  received, and no response logged before the client gave up
  not-received           in no log, and every kube-apiserver log covered the window
  unknown                a log was unreadable or did not cover the window (named)

Writes attribution.jsonl and rebuilds the summary, whose section "Where the
failed requests went" counts them by verdict, node and backend-connection.
Needs get on nodes/proxy and list on nodes (see "repro rbac").`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return fmt.Errorf("--server-request-timeout must be positive, got %v (the apiservers' --request-timeout, 60s by default)", timeout)
			}
			// The folder first: a typo there is the commoner mistake.
			if _, err := results.Open(args[0]); err != nil {
				return err
			}
			if _, err := os.Stat(filepath.Join(args[0], results.SamplesFile)); err != nil {
				return fmt.Errorf("%s has no %s: give the results folder of a run", args[0], results.SamplesFile)
			}
			if !explicitTarget(o) {
				return errors.New("name the cluster whose audit logs to read: --kubeconfig, --context, --server or KUBECONFIG (a kubeconfig found elsewhere is not used)")
			}
			t, err := runTarget(o)
			if err != nil {
				return err
			}
			rc := t.Config
			if err := attributeRun(cmd.Context(), cmd.OutOrStdout(), rc, args[0], timeout, o.logger()); err != nil {
				return err
			}
			if _, err := write.Rebuild(args[0]); err != nil {
				return fmt.Errorf("report on %s: %w", args[0], err)
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "server-request-timeout", attribute.DefaultRequestTimeout,
		"the apiservers' --request-timeout: how long after the client gave up a stalled request may still be logged")
	o.bindClusterFlags(cmd)
	return cmd
}

// attributeRun correlates the failed samples of the folder dir with the
// audit logs of the cluster cfg points at, writes attribution.jsonl and
// prints what was read and the counts.
func attributeRun(ctx context.Context, out io.Writer, cfg *rest.Config, dir string, timeout time.Duration, log *zap.Logger) error {
	prog := newAttributeProgress(ctx, log)
	began := time.Now()
	fr, err := attribute.CorrelateFolder(ctx, cfg, dir, attribute.FolderOptions{RequestTimeout: timeout, Progress: prog.update,
		Waiting: func(wait time.Duration) {
			fmt.Fprintf(out, "attribute: waiting %s for requests stalled at the end of the run to end (--server-request-timeout %s)\n", wait.Round(100*time.Millisecond), timeout)
		}})
	prog.finish()
	if err != nil {
		return err
	}
	if fr.Result == nil {
		fmt.Fprintln(out, "attribute: no failed samples, nothing to attribute")
		return nil
	}
	for _, l := range fr.Logs {
		switch {
		case l.Err != nil:
			fmt.Fprintf(out, "attribute: %s on %s: %v\n", l.Server, l.Node, l.Err)
		case l.Absent:
			log.Debug("no audit log", zap.String("server", l.Server), zap.String("node", l.Node))
		default:
			cut := ""
			if l.Cut > 0 {
				cut = fmt.Sprintf(", %d cut line(s) skipped", l.Cut)
			}
			fmt.Fprintf(out, "attribute: %s on %s: %d lines from %s to %s in %s%s\n", l.Server, l.Node, l.Lines,
				l.First.UTC().Format("15:04:05.000"), l.Last.UTC().Format("15:04:05.000"), strings.Join(l.Files, ", "), cut)
		}
	}
	counts := map[string]int{}
	for _, r := range fr.Records {
		counts[r.Verdict]++
	}
	var parts []string
	for _, v := range attribute.Verdicts {
		if counts[v] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", v, counts[v]))
		}
	}
	fmt.Fprintf(out, "attribute: %d failed sample(s): %s (%.1f MB of audit log read in %s); %s\n", len(fr.Records), strings.Join(parts, ", "),
		float64(fr.Read)/1e6, time.Since(began).Round(time.Millisecond), fr.Path)
	return nil
}

// attributeProgress shows one bar per audit log file on a terminal, a log
// line per file otherwise.
type attributeProgress struct {
	log  *zap.Logger
	p    *mpb.Progress
	mu   sync.Mutex
	bars map[string]*mpb.Bar
}

func newAttributeProgress(ctx context.Context, log *zap.Logger) *attributeProgress {
	ap := &attributeProgress{log: log, bars: map[string]*mpb.Bar{}}
	if term.IsTerminal(int(os.Stderr.Fd())) {
		ap.p = newBars(context.WithoutCancel(ctx), os.Stderr, 24)
	}
	return ap
}

func (ap *attributeProgress) update(p attribute.Progress) {
	if ap.p == nil {
		if p.Done {
			ap.log.Info("audit log read", zap.String("file", p.Source), zap.Int64("bytes", p.Read))
		}
		return
	}
	ap.mu.Lock()
	defer ap.mu.Unlock()
	b := ap.bars[p.Source]
	if b == nil {
		b = ap.p.AddBar(max(p.Total, 0),
			mpb.PrependDecorators(decor.Name(p.Source, decor.WC{C: decor.DindentRight})),
			mpb.AppendDecorators(decor.Counters(decor.SizeB1024(0), "% .1f / % .1f")))
		ap.bars[p.Source] = b
	}
	if p.Total < 0 {
		b.SetTotal(p.Read+1, false)
	}
	b.SetCurrent(p.Read)
	if p.Done {
		b.SetTotal(p.Read, true)
	}
}

func (ap *attributeProgress) finish() {
	if ap.p == nil {
		return
	}
	ap.mu.Lock()
	names := make([]string, 0, len(ap.bars))
	for n := range ap.bars {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if b := ap.bars[n]; !b.Completed() {
			b.Abort(false)
		}
	}
	ap.mu.Unlock()
	ap.p.Wait()
}
