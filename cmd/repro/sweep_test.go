package main

import (
	"strings"
	"testing"
)

func TestParseSweepArgsKubeVersions(t *testing.T) {
	o, _, err := parseSweepArgs([]string{"--scenario", "apiserver-rollout", "--lab-kube-version", "v1.29.6,v1.30.14", "--lab-profile", "etcd-stall"})
	if err != nil {
		t.Fatal(err)
	}
	if o.Key != "lab-kube-version" || o.Flag != "--lab-kube-version" || strings.Join(o.Values, " ") != "v1.29.6 v1.30.14" {
		t.Fatalf("sweep of %s (flag %s) over %v", o.Key, o.Flag, o.Values)
	}
	if strings.Join(o.Forward, " ") != "--lab-profile etcd-stall" {
		t.Errorf("forwarded %v", o.Forward)
	}
	// One release is not a sweep: it goes to every point as given.
	o, _, err = parseSweepArgs([]string{"--scenario=apiserver-rollout", "--lab-kube-version=v1.29.6", "--lab-set", "shutdown-delay=0s,40s"})
	if err != nil {
		t.Fatal(err)
	}
	if o.Key != "shutdown-delay" || o.Flag != "" || strings.Join(o.Forward, " ") != "--lab-kube-version v1.29.6" {
		t.Errorf("sweep of %s (flag %q), forwarded %v", o.Key, o.Flag, o.Forward)
	}
	for _, bad := range [][]string{
		{"--scenario", "apiserver-rollout", "--lab-kube-version", "v1.29.6,v1.31.0"},
		{"--scenario", "apiserver-rollout", "--lab-kube-version", "v1.29.6,"},
		{"--scenario", "apiserver-rollout", "--lab-kube-version", "v1.29.6,v1.30.14", "--lab-set", "shutdown-delay=0s,40s"},
	} {
		if _, _, err := parseSweepArgs(bad); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: err = %v, want one line", bad, err)
		}
	}
}
