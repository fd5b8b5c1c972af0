package attribute_test

import (
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/attribute"
)

// BenchmarkScan measures the scan of a real-shaped audit log with a few
// hundred wanted IDs (the failed samples of a bad run): bytes per second, and
// allocations, which must not grow with the log.
func BenchmarkScan(b *testing.B) {
	t0 := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)
	var sb strings.Builder
	filler(&sb, t0, 20000, 5*time.Millisecond)
	log := sb.String()
	want := map[string]struct{}{}
	for i := 0; i < 300; i++ {
		want[strings.Repeat("x", 8)+string(rune('a'+i%26))+string(rune('a'+i/26))] = struct{}{}
	}
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := attribute.Scan(strings.NewReader(log), want, time.Time{}, false, func(attribute.Event) {}); err != nil {
			b.Fatal(err)
		}
	}
}
