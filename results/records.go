package results

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration that run.json holds as Go's duration text
// ("100ms", "3.4s"), as every earlier folder holds it. Zero is omitted.
type Duration time.Duration

// D is the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String is Go's duration text.
func (d Duration) String() string { return time.Duration(d).String() }

// IsZero lets omitzero leave an unset duration out of run.json.
func (d Duration) IsZero() bool { return d == 0 }

// MarshalJSON writes the duration's text.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration's text, or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err2 := json.Unmarshal(b, &n); err2 != nil {
			return fmt.Errorf("duration: want text like \"3.4s\", got %s", b)
		}
		*d = Duration(n)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %v", s, err)
	}
	*d = Duration(v)
	return nil
}

// Settings are the parameters that shape a run's samples, under run.json's
// "settings". The JSON keys are the ones earlier folders have.
type Settings struct {
	// Interval is each poller's request interval.
	Interval Duration `json:"interval,omitzero"`
	// ProbeTimeout is one request's whole budget; 4/5 of it bounds the
	// dial, the TLS handshake and the wait for headers, as in origin's
	// sampler.
	ProbeTimeout Duration `json:"probeTimeout,omitzero"`
	// Backends are the backends polled (origin's names).
	Backends []string `json:"backends,omitempty"`
	// HTTP2 is true when the pollers spoke HTTP/2 (origin's sampler speaks
	// HTTP/1.1).
	HTTP2 bool `json:"http2,omitempty"`
	// Pollers names every poller of the run, so one that never answered
	// still has a row.
	Pollers []string `json:"pollers,omitempty"`
	// InFlightBound is the most requests a poller keeps open at once.
	InFlightBound int `json:"inFlightBound,omitempty"`
	// Baseline, CoolDown, FollowTimeout and Settle are the scenario's
	// timings: polling before the first rollout and after the last, the
	// limit on following one rollout, and the wait for the operator to
	// settle.
	Baseline      Duration `json:"baseline,omitzero"`
	CoolDown      Duration `json:"coolDown,omitzero"`
	FollowTimeout Duration `json:"followTimeout,omitzero"`
	Settle        Duration `json:"settle,omitzero"`
	// MaxDisruption is the run's limit (exit 3 above it); zero is none.
	// Recorded as "0s" when the run set no limit, as earlier folders did.
	MaxDisruption *Duration `json:"maxDisruption,omitempty"`
	// Resolution says how fine an imported run's times are.
	Resolution string `json:"resolution,omitempty"`
}

// Pairs lists the settings a run recorded as "key=value" in key order (the
// JSON keys), for a summary's one line.
func (s *Settings) Pairs() []string {
	if s == nil {
		return nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		v := string(m[k])
		var str string
		var list []string
		switch {
		case json.Unmarshal(m[k], &str) == nil:
			v = str
		case json.Unmarshal(m[k], &list) == nil:
			v = "[" + strings.Join(list, " ") + "]"
		}
		out[i] = k + "=" + v
	}
	return out
}

// Extra is everything else a run recorded about itself, under run.json's
// "extra": what it ran on, the scenario, and what each producer of
// evidence adds. The JSON keys are the ones earlier folders have.
type Extra struct {
	// Scenario is the scenario's name (apiserver-rollout, baseline).
	Scenario string `json:"scenario,omitempty"`
	// Target is "lab" or "cluster".
	Target string `json:"target,omitempty"`
	// Context is the kubeconfig context a cluster run used.
	Context string `json:"context,omitempty"`
	// Iterations is how many rollouts the run asked for.
	Iterations int `json:"iterations,omitempty"`
	// RunID names the run's forced redeployments (repro-<run id>-<n>).
	RunID string `json:"runID,omitempty"`
	// RevisionBefore is the kube-apiserver's latest available revision
	// before the first rollout.
	RevisionBefore int32 `json:"revisionBefore,omitempty"`
	// Cluster is what the run ran against (the lab's kube-apiserver too).
	Cluster *ClusterRecord `json:"cluster,omitempty"`
	// Lab is the lab the run measured; nil for a run on a cluster.
	Lab *LabRecord `json:"lab,omitempty"`
	// LabFaults are the faults the lab injected, as it injected them.
	LabFaults []LabFault `json:"labFaults,omitempty"`
	// Metrics is what reading the apiservers' metrics cost.
	Metrics *MetricsReport `json:"metrics,omitempty"`
	// AWSLB names the AWS load balancers' target groups polled.
	AWSLB *AWSLBRecord `json:"awsLB,omitempty"`
	// AWSLBPolling is how polling them went.
	AWSLBPolling *AWSLBPollStats `json:"awsLBPolling,omitempty"`
	// MeasuringUnreliableWindows counts the control poller's stalls; nil
	// when no control poller ran.
	MeasuringUnreliableWindows *int `json:"measuringUnreliableWindows,omitempty"`
	// ControlStallThreshold is the control latency the run counted as a
	// stall of the measuring host; zero when no control poller ran or the
	// folder predates it.
	ControlStallThreshold Duration `json:"controlStallThreshold,omitzero"`
	// Load is the load a lab run carried (--lab-load); nil without one.
	Load *LoadRecord `json:"load,omitempty"`
	// Imported is set for a folder written from a CI run's files.
	Imported
}

// Imported is what a folder written from origin's files (repro import)
// records of its source.
type Imported struct {
	// ImportedFrom is "origin" for such a folder.
	ImportedFrom string `json:"importedFrom,omitempty"`
	// JobRun names the CI run.
	JobRun string `json:"jobRun,omitempty"`
	// UnsetEnds says how many intervals had no end.
	UnsetEnds string `json:"unsetEnds,omitempty"`
	// Files are the files read.
	Files []string `json:"files,omitempty"`
	// Pattern is the disruption pattern asked for (--pattern).
	Pattern string `json:"pattern,omitempty"`
	// CI labels the CI run: job, build, result and versions.
	CI *CIRunLabel `json:"ciRun,omitempty"`
}

// CIRunLabel is what a CI run's own files say it ran: the job, the build,
// its result and the versions it upgraded from and to.
type CIRunLabel struct {
	Job   string `json:"job,omitempty"`
	Build string `json:"build,omitempty"`
	// Result is finished.json's result (SUCCESS, FAILURE, ...).
	Result string `json:"result,omitempty"`
	// FromVersion and ToVersion are the OpenShift releases of an upgrade
	// job (ToVersion alone for other jobs).
	FromVersion string `json:"fromVersion,omitempty"`
	ToVersion   string `json:"toVersion,omitempty"`
	// ProwURL is the run's prow page.
	ProwURL string `json:"prowURL,omitempty"`
}

// ClusterRecord is what a run ran against, so a 4.16 run and a 4.17 run tell
// themselves apart. OpenShift is false on clusters without
// config.openshift.io (the lab); the OpenShift fields are then empty.
type ClusterRecord struct {
	// ServerVersion is the kube-apiserver's /version gitVersion.
	ServerVersion string `json:"serverVersion,omitempty"`
	// OpenShift is true when config.openshift.io is served.
	OpenShift bool `json:"openshift"`
	// Version is the ClusterVersion's last completed update (its desired
	// version when none completed).
	Version string `json:"openshiftVersion,omitempty"`
	// Platform is the Infrastructure's platform status type (AWS, GCP, ...).
	Platform string `json:"platform,omitempty"`
	// ControlPlaneTopology is the Infrastructure's control-plane topology.
	ControlPlaneTopology string `json:"controlPlaneTopology,omitempty"`
	// LoadBalancerType is the load balancer the default pollers went
	// through, when known (an AWS NLB, the lab's).
	LoadBalancerType string `json:"loadBalancerType,omitempty"`
}

// Describe names the cluster in words: "OpenShift 4.17.0 (AWS, HighlyAvailable),
// Kubernetes v1.30.4", or "Kubernetes v1.34.4" without OpenShift; "" when
// nothing is known.
func (c *ClusterRecord) Describe() string {
	if c == nil {
		return ""
	}
	var parts []string
	if c.Version != "" {
		s := "OpenShift " + c.Version
		var in []string
		for _, v := range []string{c.Platform, c.ControlPlaneTopology, c.LoadBalancerType} {
			if v != "" {
				in = append(in, v)
			}
		}
		if len(in) > 0 {
			s += " (" + strings.Join(in, ", ") + ")"
		}
		parts = append(parts, s)
	} else if c.Platform != "" {
		parts = append(parts, c.Platform)
	}
	if c.ServerVersion != "" {
		parts = append(parts, "Kubernetes "+c.ServerVersion)
	}
	return strings.Join(parts, ", ")
}

// LabRecord is the lab a run measured, as repro run records it. Every knob's
// value is in Knobs, once; the other fields say what is not a knob. Earlier
// folders also repeated some knobs as fields (shutdownDelay, lbHealthInterval,
// ...): those keys are no longer written, and a reader takes the knob.
type LabRecord struct {
	// Knobs is every lab knob by its --lab-set key, as text.
	Knobs map[string]string `json:"knobs"`
	// KubeAPIServer is the kube-apiserver binary as given ("" for the lab's
	// default).
	KubeAPIServer string `json:"kubeAPIServer"`
	// KubeDefault is true when the release is the lab's default, so labels
	// name a release only where it differs.
	KubeDefault bool `json:"kubeDefault"`
	// KubeVersion is the release as the binary reported it.
	KubeVersion string `json:"kubeVersion"`
	// LB is the load balancer's data path (kernel or proxy); runs from
	// before the kernel LB recorded none and ran the proxy.
	LB string `json:"lb"`
	// Nodes is how many control-plane nodes the lab ran.
	Nodes int `json:"nodes"`
	// Profile is the lab profile ("" read as healthy).
	Profile string `json:"profile"`
	// Sets are the --lab-set changes as typed, so a fix run names itself.
	Sets []string `json:"sets"`
	// Timing is the time scale's name.
	Timing string `json:"timing"`
	// TimingFactor is how many times shorter than AWS's the durations are.
	TimingFactor int `json:"timingFactor"`
}

// Knob is a knob's text ("" when the run did not record it).
func (l *LabRecord) Knob(key string) string { return l.Knobs[key] }

// KnobDuration reads a duration knob (e.g. "lb-health-interval"); false when
// the run did not record it or it does not parse.
func (l *LabRecord) KnobDuration(key string) (time.Duration, bool) {
	v, ok := l.Knobs[key]
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(v)
	return d, err == nil
}

// KnobInt reads an integer knob (e.g. "lb-unhealthy-threshold"); false when
// the run did not record it or it does not parse.
func (l *LabRecord) KnobInt(key string) (int, bool) {
	v, ok := l.Knobs[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

// ProfileName is the lab profile, "healthy" when none was recorded.
func (l *LabRecord) ProfileName() string {
	if l.Profile == "" {
		return "healthy"
	}
	return l.Profile
}

// LabFault is one fault the lab injected: which, on whose restart, the links
// it hit and when.
type LabFault struct {
	Fault string `json:"fault"`
	// Node is the node whose restart triggered it; Nodes the links it hit.
	Node  string    `json:"node"`
	Nodes []string  `json:"nodes"`
	From  time.Time `json:"from"`
	To    time.Time `json:"to,omitzero"`
}

// MetricsReport is what reading the apiservers' metrics cost a run.
type MetricsReport struct {
	// Interval is the scrape interval; Scrape the scraper's counters.
	Interval string        `json:"scrapeInterval,omitempty"`
	Scrape   *ScrapeCounts `json:"scrape,omitempty"`
	// Monitoring names the Prometheus read after the run ("" when none),
	// Query what that cost, QueryErrors the queries that failed and
	// NotRead why it was not read at all.
	Monitoring  string     `json:"monitoring,omitempty"`
	Query       *QueryCost `json:"query,omitempty"`
	QueryErrors []string   `json:"queryErrors,omitempty"`
	NotRead     string     `json:"notRead,omitempty"`
}

// ScrapeCounts are a metrics scraper's counters.
type ScrapeCounts struct {
	Scrapes  int64 `json:"scrapes"`
	Failures int64 `json:"failures"`
	// Bytes counts the bodies read, Signals the lines written.
	Bytes   int64 `json:"bytes"`
	Signals int64 `json:"signals"`
}

// QueryCost is what a run's Prometheus queries cost.
type QueryCost struct {
	Queries int           `json:"queries"`
	Elapsed time.Duration `json:"elapsedNs"`
	Bytes   int64         `json:"bytes"`
}

// AWSLBRecord names the AWS load balancers' target groups a run polled.
type AWSLBRecord struct {
	// InfrastructureName is the cluster's infrastructure ID, the prefix
	// of its load balancers' names.
	InfrastructureName string `json:"infrastructureName"`
	Region             string `json:"region"`
	// TargetGroups are the groups polled.
	TargetGroups []AWSTargetGroup `json:"targetGroups"`
}

// AWSTargetGroup is one of the cluster's API target groups (port 6443 of
// <infraID>-int and -ext).
type AWSTargetGroup struct {
	Name string
	ARN  string
	// LoadBalancer is the load balancer's name, Scheme "internal" or
	// "internet-facing".
	LoadBalancer string
	Scheme       string
	Port         int32
	// Owned says the group carries the cluster's ownership tag
	// kubernetes.io/cluster/<infraID>.
	Owned bool
}

// AWSLBPollStats says how polling the AWS target groups went.
type AWSLBPollStats struct {
	Polls     int `json:"polls"`
	Throttled int `json:"throttled"`
	Errors    int `json:"errors"`
	Records   int `json:"records"`
	// MaxGap is the longest time between two answered polls of a group.
	MaxGap time.Duration `json:"maxGap"`
}

// String says the CI run in one line: "periodic-...-upgrade #1813938460914880512,
// 4.16.3 -> 4.17.0-rc.1, FAILURE".
func (c *CIRunLabel) String() string {
	if c == nil {
		return ""
	}
	var parts []string
	if c.Job != "" {
		s := c.Job
		if c.Build != "" {
			s += " #" + c.Build
		}
		parts = append(parts, s)
	}
	switch {
	case c.FromVersion != "" && c.ToVersion != "":
		parts = append(parts, c.FromVersion+" -> "+c.ToVersion)
	case c.ToVersion != "":
		parts = append(parts, c.ToVersion)
	}
	if c.Result != "" {
		parts = append(parts, c.Result)
	}
	return strings.Join(parts, ", ")
}
