package prober

import (
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/results"
)

// TestMarkUnanswered: a request open at stop counts as disruption only once
// it had waited longer than the header timeout.
func TestMarkUnanswered(t *testing.T) {
	header := phaseTimeout(DefaultProbeTimeout)
	short := results.Sample{ErrorClass: results.ClassAborted, Duration: 2 * time.Second}
	markUnanswered(&short, header)
	if short.ErrorClass != results.ClassAborted || short.Error != "unanswered at stop after 2s" {
		t.Errorf("short wait: %q %q", short.ErrorClass, short.Error)
	}
	long := results.Sample{ErrorClass: results.ClassAborted, Duration: header + time.Second}
	markUnanswered(&long, header)
	if long.ErrorClass != results.ClassHeaderTimeout || !strings.Contains(long.Error, "longer than the header timeout") {
		t.Errorf("long wait: %q %q", long.ErrorClass, long.Error)
	}
}
