package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/results"
)

// TestProfileAggregatedEtcdStall: the aggregated servers' own etcd link
// stalls on master-1 (both groups' replicas there), the kube-apiservers'
// links do not. Prediction (fast scale, restated from the profile): the
// aggregator sends about a third of openshift-api and oauth-api requests to
// master-1's stalled replicas until they leave their Services' endpoints
// (their etcd readiness check times out after 2 s, then the 1 s readiness
// probe sees it), so those requests time out on headers (2.72 s); kube-api
// requests never reach these servers and never fail. The window's length is
// set by the check timeout and the probe, not by the 6 s stall, so no
// poller loses more than the stall.
func TestProfileAggregatedEtcdStall(t *testing.T) {
	pr := runProfile(t, "aggregated-etcd-stall")
	var stalls int
	var from, to time.Time
	for _, f := range pr.faults {
		if f.Fault == "aggregated-etcd-stall" {
			stalls++
			from, to = f.From, f.To
			if f.Node != "master-1" || len(f.Nodes) != 2 {
				t.Errorf("stall %+v, want master-1's two replicas' links", f)
			}
		}
	}
	if stalls != 1 {
		t.Fatalf("fault windows %+v, want one aggregated-etcd-stall", pr.faults)
	}
	aggFailures := int64(0)
	for _, p := range pr.a.Pollers {
		switch {
		case strings.Contains(p.Backend, "kube-api"):
			if p.Failures > 0 {
				t.Errorf("%s: %d failures %v; kube-api requests never reach the aggregated servers", p.Name, p.Failures, p.Classes)
			}
		case strings.Contains(p.Backend, "openshift-api"), strings.Contains(p.Backend, "oauth-api"):
			aggFailures += p.Classes[results.ClassHeaderTimeout]
			if p.Disrupted > to.Sub(from)+time.Second {
				t.Errorf("%s: %v disrupted, more than the %v stall", p.Name, p.Disrupted, to.Sub(from))
			}
		}
	}
	if aggFailures == 0 {
		t.Errorf("no header timeouts on openshift-api or oauth-api: the stalled replicas were never routed to")
	}
	for _, iv := range pr.a.Intervals {
		if iv.Class == results.ClassHeaderTimeout && (iv.From.Before(from.Add(-interval)) || iv.From.After(to)) {
			t.Errorf("%s: header timeout at %s outside the stall %s-%s", iv.Name, iv.From.Format("15:04:05.000"), from.Format("15:04:05.000"), to.Format("15:04:05.000"))
		}
	}
	// Anything else is the healthy lab's cost around a kube-apiserver's
	// restart (a 429 at a listener's close, AWS's connection termination).
	onlyClasses(t, pr, append(append([]results.ErrorClass{results.ClassHTTP429}, stalled...), terminated...)...)
	sentUnanswered(t, pr)
}

// TestLabUpShowsAvailableAPIServices runs `repro lab up` as a user does:
// it must print both APIServices as Available with their three replicas
// (other processes than the kube-apiservers it lists), then stop on
// Ctrl-C leaving no lab process behind.
func TestLabUpShowsAvailableAPIServices(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the lab")
	}
	labDir, labArgs := labDirArgs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, reproBin, append([]string{"lab", "up"}, labArgs...)...)
	cmd.Env = labEnv(t)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	began := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.HasPrefix(sc.Text(), "press Ctrl-C") {
			break
		}
	}
	t.Logf("FIGURE repro lab up ready after %s", time.Since(began).Round(time.Millisecond))
	out := strings.Join(lines, "\n")
	t.Logf("repro lab up:\n%s", out)
	kasPIDs := map[string]bool{}
	replicaPIDs := map[string]string{}
	pidRE := regexp.MustCompile(`^  (master-\d): .*\(pid (\d+),`)
	repRE := regexp.MustCompile(`^    (openshift-apiserver|openshift-oauth-apiserver)/apiserver-(master-\d): \S+ \(pid (\d+)\)$`)
	for _, l := range lines {
		if m := pidRE.FindStringSubmatch(l); m != nil {
			kasPIDs[m[2]] = true
		}
		if m := repRE.FindStringSubmatch(l); m != nil {
			replicaPIDs[m[1]+"/"+m[2]] = m[3]
		}
	}
	for _, want := range []string{"APIService v1.image.openshift.io: Available", "APIService v1.oauth.openshift.io: Available"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("repro lab up does not print %q", want)
		}
	}
	if len(kasPIDs) != 3 || len(replicaPIDs) != 6 {
		t.Errorf("repro lab up lists %d kube-apiservers and %d aggregated replicas, want 3 and 6", len(kasPIDs), len(replicaPIDs))
	}
	for k, pid := range replicaPIDs {
		if kasPIDs[pid] {
			t.Errorf("%s has a kube-apiserver's pid %s", k, pid)
		}
		exe, _ := os.Readlink("/proc/" + pid + "/exe")
		if filepath.Base(exe) != "aggregated-apiserver" {
			t.Errorf("%s: pid %s runs %q, not the aggregated apiserver", k, pid, exe)
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("repro lab up after Ctrl-C: %v\n%s", err, tailLines(stderr.String(), 20))
	}
	noLabProcesses(t, labDir)
}

func tailLines(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}
