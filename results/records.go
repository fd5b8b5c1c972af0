package results

import (
	"encoding/json"
	"errors"
	"strconv"
	"time"
)

// The keys under run.json's "extra" that hold typed records. Writer and
// readers go through SetCluster/Cluster and SetLab/Lab, so they agree on
// the fields at compile time; the keys stay where earlier folders have them.
const (
	extraCluster = "cluster"
	extraLab     = "lab"
)

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
}

// LabRecord is the lab a run measured, as repro run records it. Durations
// are Go duration strings, as every earlier folder has them. The fields are
// declared in the order of their JSON keys, so run.json reads as it did when
// this was a map.
type LabRecord struct {
	// GracePeriod is the apiserver's termination grace period.
	GracePeriod string `json:"gracePeriod"`
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
	// LBHealthInterval is the LB's health-check interval.
	LBHealthInterval string `json:"lbHealthInterval"`
	// LBHealthTimeout is the LB's health-check timeout.
	LBHealthTimeout string `json:"lbHealthTimeout"`
	// LBHealthyThreshold is how many passed checks make a target healthy.
	LBHealthyThreshold int `json:"lbHealthyThreshold"`
	// LBUnhealthyThreshold is how many failed checks make it unhealthy.
	LBUnhealthyThreshold int `json:"lbUnhealthyThreshold"`
	// MinReadyTime is how long a restarted node waits before the next rolls.
	MinReadyTime string `json:"minReadyTime"`
	// Nodes is how many control-plane nodes the lab ran.
	Nodes int `json:"nodes"`
	// Profile is the lab profile ("" read as healthy).
	Profile string `json:"profile"`
	// Sets are the --lab-set changes as typed, so a fix run names itself.
	Sets []string `json:"sets"`
	// ShutdownDelay is the apiserver's --shutdown-delay-duration.
	ShutdownDelay string `json:"shutdownDelay"`
	// Timing is the time scale's name.
	Timing string `json:"timing"`
	// TimingFactor is how many times shorter than AWS's the durations are.
	TimingFactor int `json:"timingFactor"`
}

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

// SetCluster records what the run ran against.
func (r *Run) SetCluster(c ClusterRecord) { r.SetExtra(extraCluster, &c) }

// SetLab records the lab the run measured.
func (r *Run) SetLab(l *LabRecord) { r.SetExtra(extraLab, l) }

// Cluster is what the run ran against; nil when run.json does not say (or
// says it in a form this version cannot read).
func (r *Run) Cluster() *ClusterRecord {
	var c ClusterRecord
	if !r.extraRecord(extraCluster, &c) {
		return nil
	}
	return &c
}

// Lab is the lab the run measured; nil for a run on a cluster.
func (r *Run) Lab() *LabRecord {
	var l LabRecord
	if !r.extraRecord(extraLab, &l) {
		return nil
	}
	return &l
}

// extraRecord decodes Extra[key] into v: a record set in this process, or
// the generic JSON run.json was read into. A field of another type (an
// older folder's) is left zero and the rest still read.
func (r *Run) extraRecord(key string, v any) bool {
	x, ok := r.Extra[key]
	if !ok || x == nil {
		return false
	}
	b, err := json.Marshal(x)
	if err != nil {
		return false
	}
	err = json.Unmarshal(b, v)
	var te *json.UnmarshalTypeError
	return err == nil || errors.As(err, &te)
}
