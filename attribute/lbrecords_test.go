package attribute_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/repro-tools/repro/attribute"
	"github.com/repro-tools/repro/results"
)

// The lab load balancer's records name the node behind a sample's
// connection: the record of its local address open at the time.
func TestLBAnsweredBy(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lb-connections.jsonl")
	write(t, path, `{"event":"open","id":1,"client":"127.0.0.1:5000","target":"master-0","action":"forward","opened":"2026-12-04T01:00:00Z","bytesUp":0,"bytesDown":0}
{"event":"close","id":1,"client":"127.0.0.1:5000","target":"master-0","action":"forward","opened":"2026-12-04T01:00:00Z","closed":"2026-12-04T01:00:10Z","bytesUp":10,"bytesDown":10}
{"event":"open","id":2,"client":"127.0.0.1:5000","target":"master-2","action":"forward","opened":"2026-12-04T01:00:20Z","bytesUp":0,"bytesDown":0}
`)
	by, err := attribute.LBAnsweredBy(path)
	if err != nil || by == nil {
		t.Fatalf("LBAnsweredBy: %v", err)
	}
	at := func(sec int) *results.Sample {
		return &results.Sample{LocalAddr: "127.0.0.1:5000", Start: time.Date(2026, 12, 4, 1, 0, sec, 0, time.UTC), Duration: 5 * time.Millisecond}
	}
	if n := by(at(5)); n != "master-0" {
		t.Errorf("at +5s: %q, want master-0", n)
	}
	if n := by(at(25)); n != "master-2" {
		t.Errorf("at +25s: %q, want master-2 (still open)", n)
	}
	if n := by(at(15)); n != "" {
		t.Errorf("at +15s: %q, want none", n)
	}
	s := at(5)
	s.ServedBy = "master-1"
	if n := by(s); n != "master-1" {
		t.Errorf("with a disruption header: %q, want its host", n)
	}
	if by, err := attribute.LBAnsweredBy(filepath.Join(dir, "none.jsonl")); by != nil || err != nil {
		t.Errorf("without records: %v %v, want nil, nil", by != nil, err)
	}
}
