package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/repro-tools/repro/results"
)

// AttributionRecord is the part of a line of attribution.jsonl (written by
// repro attribute) the report reads.
type AttributionRecord struct {
	Backend    string             `json:"backend"`
	Connection string             `json:"connection"`
	Poller     string             `json:"poller"`
	Seq        uint64             `json:"seq"`
	AuditID    string             `json:"audit_id"`
	Verdict    string             `json:"verdict"`
	Node       string             `json:"node"`
	Stage      string             `json:"stage"`
	Detail     string             `json:"detail"`
	Class      results.ErrorClass `json:"error_class"`
	Code       int                `json:"code"`
}

// Attribution is what attribution.jsonl says of a run's failed samples.
type Attribution struct {
	Records []AttributionRecord
}

// LoadAttribution reads an attribution.jsonl; nil, nil when there is none
// (attribution did not run).
func LoadAttribution(path string) (*Attribution, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	at := &Attribution{}
	_, err := results.ReadJSONL(path, func(line []byte) error {
		var r AttributionRecord
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		if r.Poller == "" {
			r.Poller = results.PollerName(r.Backend, results.ConnectionType(r.Connection))
		}
		at.Records = append(at.Records, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", results.AttributionFile, err)
	}
	return at, nil
}

// ByAuditID returns the hover text of each attributed sample, by Audit-ID.
func (at *Attribution) ByAuditID() func(string) string {
	if at == nil {
		return nil
	}
	m := make(map[string]string, len(at.Records))
	for _, r := range at.Records {
		t := r.Verdict
		if r.Node != "" {
			t += " (" + r.Node + ")"
		}
		m[r.AuditID] = t + ": " + r.Detail
	}
	return func(id string) string { return m[id] }
}
