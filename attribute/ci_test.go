package attribute_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/attribute"
	"github.com/repro-tools/repro/ci"
	"github.com/repro-tools/repro/ci/citest"
)

func TestAttributeCIRunFromGatheredLogs(t *testing.T) {
	base := time.Date(2024, 7, 10, 3, 0, 0, 0, time.UTC)
	citest.Serve(t, citest.ReportRuns(base))
	c := citest.Client(t, t.TempDir())
	var refs []ci.Ref
	for _, b := range citest.ReportBuilds[2:] {
		r, err := ci.ParseRef("https://prow.ci.openshift.org/view/gs/origin-ci-test/logs/" + citest.Job + "/" + b)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, r)
	}
	res, err := c.Gather(context.Background(), ci.Request{Refs: refs, Audit: true})
	if err != nil {
		t.Fatal(err)
	}
	audited := res.Runs[1]
	got, err := attribute.AttributeCIRun(context.Background(), audited.Dir, audited.Target, attribute.CIOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Failures != 4 || got.WithoutID != 1 || len(got.Records) != 3 {
		t.Fatalf("failures %d, without ID %d, records %d; notes %v", got.Failures, got.WithoutID, len(got.Records), got.Notes)
	}
	want := map[string]string{
		citest.AuditIDs[0]: attribute.ReceivedNotAnswered,
		citest.AuditIDs[1]: attribute.Answered,
		citest.AuditIDs[2]: attribute.NotReceived,
	}
	for _, r := range got.Records {
		if r.Verdict != want[r.AuditID] {
			t.Errorf("%s (%s %s): %s, want %s: %s", r.AuditID, r.Backend, r.Connection, r.Verdict, want[r.AuditID], r.Detail)
		}
	}
	if r := got.Records[0]; r.Node != citest.Nodes[0] || r.Backend != "kube-api" {
		t.Errorf("first record %+v", r)
	}
	if !strings.Contains(strings.Join(got.Notes, "\n"), "1 of 4 failed intervals carry no request-audit-id") {
		t.Errorf("notes %v", got.Notes)
	}
	// The clean run's failures: none. A run without gathered logs says so.
	clean := res.Runs[0]
	got, err = attribute.AttributeCIRun(context.Background(), clean.Dir, clean.Target, attribute.CIOptions{})
	if err != nil || got.Failures != 0 || !strings.Contains(got.Notes[0], "nothing to attribute") {
		t.Errorf("clean run: %v %+v", err, got)
	}
}

func TestAttributeCIRunWithoutLogs(t *testing.T) {
	base := time.Date(2024, 7, 10, 3, 0, 0, 0, time.UTC)
	citest.Serve(t, citest.ReportRuns(base))
	c := citest.Client(t, t.TempDir())
	ref, _ := ci.ParseRef("gs://origin-ci-test/logs/" + citest.Job + "/" + citest.ReportBuilds[3])
	res, err := c.Gather(context.Background(), ci.Request{Refs: []ci.Ref{ref}})
	if err != nil || res.Partial() {
		t.Fatal(err, res.Failures)
	}
	got, err := attribute.AttributeCIRun(context.Background(), res.Runs[0].Dir, res.Runs[0].Target, attribute.CIOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Records) != 3 || got.Records[0].Verdict != attribute.Unknown || !strings.Contains(strings.Join(got.Notes, "\n"), "no gathered audit logs") {
		t.Errorf("%+v %v", got.Records, got.Notes)
	}
}
