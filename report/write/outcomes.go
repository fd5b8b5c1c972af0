package write

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/repro-tools/repro/report"
)

// writeOutcomes is summary.txt's graded view: per poller with failures, how
// they grade, what a client-go client would have lost, and what fell in a
// window where the measuring side itself was unreliable.
func writeOutcomes(b *strings.Builder, a *report.Analysis) {
	o := a.Outcomes
	if o == nil || o.Totals().Failures == 0 && len(o.Windows) == 0 && o.WindowsError == "" {
		return
	}
	b.WriteString("\nOutcomes graded (origin #31412: a 429 with Retry-After is retryable; resets, refused connects, timeouts, 5xx failed; DNS failures are a sampler outage, not graded).\n")
	b.WriteString("CLIENT-GO LOST: what a client-go GET with its default retries (Retry-After honoured; resets, EOF, GOAWAY retried) would still have lost.\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BACKEND-CONNECTION\tFAILURES\tRETRYABLE\tFAILED\tCLIENT-GO LOST\tRECOVERED\tMAX ADDED WAIT\tDISCOUNTED")
	for _, p := range o.Pollers {
		if p.Failures == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t%d\n", p.Name, p.Failures, p.Retryable, p.Failed, p.ClientLost, p.ClientRecovered, formatMs(p.MaxAddedWait), p.Discounted)
	}
	tw.Flush()
	if n := len(o.Windows); n > 0 {
		var d time.Duration
		for _, w := range o.Windows {
			if !w.To.IsZero() {
				d += w.To.Sub(w.At)
			}
		}
		fmt.Fprintf(b, "The measuring side was unreliable in %d window(s), %s in all (the control poller's stalls or failures, or a failed canary): DISCOUNTED failures fell inside them; DISRUPTED still counts them.\n", n, formatMs(d))
	}
	if o.WindowsError != "" {
		fmt.Fprintf(b, "No failure was discounted: the measuring side's windows could not be read (%s).\n", o.WindowsError)
	}
}
