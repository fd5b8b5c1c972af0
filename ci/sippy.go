package ci

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/repro-tools/repro/results"
)

// DefaultSippyURL is Sippy's public instance.
const DefaultSippyURL = "https://sippy.dptools.openshift.org"

// sippyBatch bounds the run IDs asked for in one request (they travel in the
// query string).
const sippyBatch = 50

// maxSippyBody bounds one answer.
const maxSippyBody = 32 << 20

// sippyRows is the answer of Sippy's /api/jobs/runs/disruption, as
// openshift-eng/ai-helpers find_disruption_runs.py reads it:
// {"rows":[{"job_run_name","backend_name","disruption_seconds"}]}.
type sippyRows struct {
	Rows []struct {
		JobRunName        json.Number `json:"job_run_name"`
		BackendName       string      `json:"backend_name"`
		DisruptionSeconds float64     `json:"disruption_seconds"`
	} `json:"rows"`
}

// SippyDisruption asks Sippy for the per-backend disruption of runs (by
// build ID): GET BASE/api/jobs/runs/disruption?job_run_names=ID,ID,... A run
// Sippy has no rows for is absent from the answer.
func SippyDisruption(ctx context.Context, hc *http.Client, base string, builds []string) (map[string]map[string]time.Duration, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	u, err := url.Parse(strings.TrimRight(base, "/") + "/api/jobs/runs/disruption")
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("--sippy-url %q: give an http(s) URL such as %s", base, DefaultSippyURL)
	}
	out := map[string]map[string]time.Duration{}
	for i := 0; i < len(builds); i += sippyBatch {
		batch := builds[i:min(i+sippyBatch, len(builds))]
		q := url.Values{"job_run_names": {strings.Join(batch, ",")}}
		u.RawQuery = q.Encode()
		if err := sippyGet(ctx, hc, u.String(), out); err != nil {
			return out, err
		}
	}
	return out, nil
}

func sippyGet(ctx context.Context, hc *http.Client, u string, out map[string]map[string]time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, DefaultCallTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("sippy: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSippyBody+1))
	if err != nil {
		return fmt.Errorf("sippy: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("sippy: HTTP %d: %s", resp.StatusCode, results.OneLine(string(body)))
	}
	if len(body) > maxSippyBody {
		return fmt.Errorf("sippy: answer over %d bytes", maxSippyBody)
	}
	var rows sippyRows
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.UseNumber()
	if err := dec.Decode(&rows); err != nil {
		return fmt.Errorf("sippy: not the documented answer ({\"rows\":[...]}): %v", err)
	}
	for _, r := range rows.Rows {
		id := r.JobRunName.String()
		if out[id] == nil {
			out[id] = map[string]time.Duration{}
		}
		out[id][r.BackendName] += time.Duration(r.DisruptionSeconds * float64(time.Second))
	}
	return nil
}
