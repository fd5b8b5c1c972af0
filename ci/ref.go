package ci

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Buckets. Prow's older URLs name origin-ci-test; the same objects are read
// from test-platform-results today (openshift-eng/ai-helpers
// download_timelines.py reads that bucket only).
const (
	BucketOriginCITest       = "origin-ci-test"
	BucketTestPlatformResult = "test-platform-results"
)

// bucketAliases maps a bucket named in a URL to the bucket read.
var bucketAliases = map[string]string{BucketOriginCITest: BucketTestPlatformResult}

// Hosts whose URLs name a run.
const (
	ProwHost   = "prow.ci.openshift.org"
	GCSWebHost = "gcsweb-ci.apps.ci.l2s4.p1.openshiftapps.com"
)

// AcceptedForms is the one line that says which inputs name a CI run.
const AcceptedForms = "use https://" + ProwHost + "/view/gs/BUCKET/logs/JOB/BUILD, https://" + GCSWebHost +
	"/gcs/BUCKET/logs/JOB/BUILD/, gs://BUCKET/logs/JOB/BUILD (pr-logs/pull/ORG_REPO/PR/JOB/BUILD in place of logs/JOB/BUILD too)"

// Ref names one CI run in a bucket.
type Ref struct {
	// Bucket is the bucket read (after the origin-ci-test mapping); Named is
	// the bucket the input named.
	Bucket, Named string
	// Prefix is the run's object prefix without trailing slash:
	// logs/JOB/BUILD or pr-logs/pull/ORG_REPO/PR/JOB/BUILD.
	Prefix string
	Job    string
	Build  string
	// PR and Repo are set for pr-logs runs.
	Repo, PR string
}

// IsRemote reports whether an import argument names a CI run by URL rather
// than a local file or folder.
func IsRemote(arg string) bool {
	return strings.HasPrefix(arg, "gs://") || strings.HasPrefix(arg, "https://") || strings.HasPrefix(arg, "http://")
}

// ParseRef parses a prow job URL, a gcsweb URL or a gs:// URI naming one
// run. A URL naming a file inside the run names the run.
func ParseRef(s string) (Ref, error) {
	bad := func(why string) (Ref, error) {
		return Ref{}, fmt.Errorf("%q: %s; %s", s, why, AcceptedForms)
	}
	var path string
	switch {
	case strings.HasPrefix(s, "gs://"):
		path = strings.TrimPrefix(s, "gs://")
	case strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://"):
		u, err := url.Parse(s)
		if err != nil {
			return bad("not a URL")
		}
		p := u.EscapedPath()
		if up, err := url.PathUnescape(p); err == nil {
			p = up
		}
		switch {
		case u.Host == ProwHost && strings.HasPrefix(p, "/view/gs/"):
			path = strings.TrimPrefix(p, "/view/gs/")
		case u.Host == GCSWebHost && strings.HasPrefix(p, "/gcs/"):
			path = strings.TrimPrefix(p, "/gcs/")
		case strings.HasPrefix(p, "/view/gs/"):
			// A prow deployment on another host keeps the same paths.
			path = strings.TrimPrefix(p, "/view/gs/")
		case strings.HasPrefix(p, "/gcs/"):
			path = strings.TrimPrefix(p, "/gcs/")
		default:
			return bad("not a prow job page or gcsweb path")
		}
	default:
		return bad("not a URL")
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return bad("empty or relative path element")
		}
	}
	if len(parts) < 2 {
		return bad("no bucket and run path")
	}
	r := Ref{Named: parts[0], Bucket: parts[0]}
	if b, ok := bucketAliases[r.Named]; ok {
		r.Bucket = b
	}
	rest := parts[1:]
	switch {
	case rest[0] == "logs" && len(rest) >= 3:
		r.Job, r.Build = rest[1], rest[2]
		r.Prefix = strings.Join(rest[:3], "/")
	case rest[0] == "pr-logs" && len(rest) >= 6 && rest[1] == "pull":
		r.Repo, r.PR, r.Job, r.Build = rest[2], rest[3], rest[4], rest[5]
		r.Prefix = strings.Join(rest[:6], "/")
	default:
		return bad("the path names no run (logs/JOB/BUILD)")
	}
	if !isBuildID(r.Build) {
		return bad(fmt.Sprintf("build %q is not a number", r.Build))
	}
	return r, nil
}

// isBuildID reports whether s is a prow build ID: decimal digits.
func isBuildID(s string) bool {
	if s == "" || len(s) > 25 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// JobRef names a run of a periodic or postsubmit job in a bucket.
func JobRef(bucket, job, build string) (Ref, error) {
	if job == "" || strings.ContainsAny(job, "/ ") {
		return Ref{}, fmt.Errorf("--job %q: a prow job name has no slashes or spaces", job)
	}
	if !isBuildID(build) {
		return Ref{}, errors.New("build " + build + " is not a number")
	}
	r := Ref{Named: bucket, Bucket: bucket, Job: job, Build: build, Prefix: "logs/" + job + "/" + build}
	if b, ok := bucketAliases[bucket]; ok {
		r.Bucket = b
	}
	return r, nil
}

// ProwURL is the run's prow job page.
func (r Ref) ProwURL() string {
	return "https://" + ProwHost + "/view/gs/" + r.Bucket + "/" + r.Prefix
}

// String is the run's gs:// URI.
func (r Ref) String() string { return "gs://" + r.Bucket + "/" + r.Prefix }

// Object is the name of a file of the run.
func (r Ref) Object(rel string) string { return r.Prefix + "/" + rel }
