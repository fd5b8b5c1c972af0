package ci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/storage"
	"github.com/repro-tools/repro/results"
	"golang.org/x/sync/errgroup"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
)

// Defaults for a Client.
const (
	// DefaultMaxObject bounds one downloaded object. Timeline files of long
	// upgrade jobs reach a few hundred MB.
	DefaultMaxObject int64 = 1 << 30
	// maxSmall bounds the files read into memory: prowjob.json,
	// started.json, finished.json, backend-disruption_*.json.
	maxSmall int64 = 16 << 20
	// DefaultCallTimeout bounds one metadata call (a listing page, a small
	// file).
	DefaultCallTimeout = 60 * time.Second
	// DefaultObjectTimeout bounds the download of one large object.
	DefaultObjectTimeout = 15 * time.Minute
	// DefaultParallel is the number of objects downloaded at once.
	DefaultParallel = 8
)

// Where origin's test step leaves its files, under artifacts/TARGET/
// (openshift/release step registry openshift-e2e-test; gather-extra).
const (
	junitDir = "openshift-e2e-test/artifacts/junit/"
	auditDir = "gather-extra/artifacts/audit_logs/"
)

// AuditServers are the gathered audit log folders read for attribution
// (gather-extra also gathers etcd's, which attribution does not read).
var AuditServers = []string{"kube-apiserver", "openshift-apiserver", "oauth-apiserver"}

// Progress receives a fetch's progress, from several goroutines at once.
type Progress interface {
	// Plan adds objects and bytes about to be downloaded.
	Plan(objects int, bytes int64)
	// Transferred adds bytes written to disk.
	Transferred(n int64)
	// Done is called once per planned object, downloaded or not.
	Done()
}

type noProgress struct{}

func (noProgress) Plan(int, int64)   {}
func (noProgress) Transferred(int64) {}
func (noProgress) Done()             {}

// Client fetches CI runs into a cache.
type Client struct {
	gcs   *storage.Client
	Cache *Cache
	// Offline reads the cache only.
	Offline bool
	// MaxObject bounds one object's size (default DefaultMaxObject).
	MaxObject int64
	// CallTimeout and ObjectTimeout bound each call (defaults above).
	CallTimeout, ObjectTimeout time.Duration
	// Progress, when set, follows the downloads.
	Progress Progress

	sem chan struct{}
}

// NewClient returns a client reading the buckets anonymously; gcs may be
// nil when offline. parallel bounds the objects downloaded at once.
func NewClient(gcs *storage.Client, cache *Cache, parallel int) *Client {
	if parallel <= 0 {
		parallel = DefaultParallel
	}
	return &Client{gcs: gcs, Cache: cache, sem: make(chan struct{}, parallel)}
}

// NewStorage opens an anonymous storage client. The library itself reads
// STORAGE_EMULATOR_HOST and then talks to that host instead.
func NewStorage(ctx context.Context, opts ...option.ClientOption) (*storage.Client, error) {
	return storage.NewClient(ctx, append([]option.ClientOption{option.WithoutAuthentication()}, opts...)...)
}

func (c *Client) progress() Progress {
	if c.Progress == nil {
		return noProgress{}
	}
	return c.Progress
}

func (c *Client) callTimeout() time.Duration {
	if c.CallTimeout > 0 {
		return c.CallTimeout
	}
	return DefaultCallTimeout
}

func (c *Client) objectTimeout() time.Duration {
	if c.ObjectTimeout > 0 {
		return c.ObjectTimeout
	}
	return DefaultObjectTimeout
}

func (c *Client) maxObject() int64 {
	if c.MaxObject > 0 {
		return c.MaxObject
	}
	return DefaultMaxObject
}

// Want says which stages a fetch needs.
type Want struct {
	Disruption, Timelines, Audit bool
}

func (w Want) stages() []string {
	s := []string{StageMeta}
	if w.Disruption {
		s = append(s, StageDisruption)
	}
	if w.Timelines {
		s = append(s, StageTimelines)
	}
	if w.Audit {
		s = append(s, StageAudit)
	}
	return s
}

// ErrNotCached is returned offline for a run the cache does not hold.
var ErrNotCached = errors.New("not in the cache (--offline reads only the cache; drop it to fetch)")

// Fetch brings the stages w asks for of one run into the cache and returns
// its record. A file that cannot be fetched is a line in the record's
// Missing, not an error; an error means the run could not be read at all
// (its record names why).
func (c *Client) Fetch(ctx context.Context, ref Ref, w Want) (*Run, error) {
	dir := c.Cache.Dir(ref)
	r, err := ReadRun(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if r == nil {
		r = &Run{CIRunManifest: results.CIRunManifest{Bucket: ref.Bucket, NamedBucket: ref.Named, Prefix: ref.Prefix, Job: ref.Job, Build: ref.Build,
			Repo: ref.Repo, PR: ref.PR, ProwURL: ref.ProwURL()}, Dir: dir}
	}
	if r.NamedBucket == "" || r.NamedBucket == r.Bucket {
		r.NamedBucket = ref.Named
	}
	need := w.stages()
	have := true
	for _, s := range need {
		if !r.Has(s) {
			have = false
		}
	}
	// A stage is recorded only when all of it was fetched: a run still
	// going (no finished.json), a file that failed, are tried again.
	if have {
		// What else the record says is missing was not asked for now.
		r.Missing = nil
		return r, nil
	}
	if c.Offline {
		if len(r.Stages) == 0 {
			return nil, fmt.Errorf("%s: %w", ref, ErrNotCached)
		}
		for _, s := range need {
			if !r.Has(s) {
				r.Missing = appendOnce(r.Missing, s+": "+ErrNotCached.Error())
			}
		}
		return r, nil
	}
	if c.gcs == nil {
		return nil, errors.New("no storage client")
	}
	r.Missing = nil
	r.Complete = false
	bucket := c.gcs.Bucket(ref.Bucket)
	finish := func() error {
		r.Complete = len(r.Missing) == 0
		r.FetchedAt = time.Now().UTC()
		sort.Strings(r.Files)
		return r.write()
	}
	if !r.Has(StageMeta) || r.Target == "" {
		if err := c.fetchMeta(ctx, bucket, r); err != nil {
			r.Missing = appendOnce(r.Missing, err.Error())
			if werr := finish(); werr != nil {
				return nil, werr
			}
			return r, err
		}
	}
	// stage runs one stage's downloads and records it when nothing of it
	// is missing.
	stage := func(name string, list func() ([]storage.ObjectAttrs, string, error)) {
		if r.Has(name) {
			return
		}
		before := len(r.Missing)
		objs, none, err := list()
		switch {
		case err != nil:
			r.Missing = appendOnce(r.Missing, err.Error())
		case len(objs) == 0:
			r.Missing = appendOnce(r.Missing, none)
		default:
			c.download(ctx, ref, r, objs)
		}
		if len(r.Missing) == before {
			r.addStage(name)
		}
	}
	junitPrefix := ref.Object("artifacts/" + r.Target + "/" + junitDir)
	var junit []storage.ObjectAttrs
	var junitErr error
	listed := false
	pick := func(prefix string) ([]storage.ObjectAttrs, error) {
		if !listed {
			junit, junitErr = c.list(ctx, bucket, junitPrefix, "/")
			listed = true
			if junitErr != nil {
				junitErr = fmt.Errorf("listing artifacts/%s/%s: %w", r.Target, junitDir, junitErr)
			}
		}
		var out []storage.ObjectAttrs
		for _, o := range junit {
			base := path.Base(o.Name)
			if strings.HasPrefix(base, prefix) && strings.HasSuffix(base, ".json") {
				out = append(out, o)
			}
		}
		return out, junitErr
	}
	if w.Disruption {
		stage(StageDisruption, func() ([]storage.ObjectAttrs, string, error) {
			objs, err := pick("backend-disruption")
			return objs, "no backend-disruption_*.json under artifacts/" + r.Target + "/" + junitDir, err
		})
	}
	if w.Timelines {
		stage(StageTimelines, func() ([]storage.ObjectAttrs, string, error) {
			objs, err := pick("e2e-timelines_spyglass_")
			return objs, "no timeline (e2e-timelines_spyglass_*.json) under artifacts/" + r.Target + "/" + junitDir, err
		})
	}
	if w.Audit {
		stage(StageAudit, func() ([]storage.ObjectAttrs, string, error) {
			prefix := ref.Object("artifacts/" + r.Target + "/" + auditDir)
			all, err := c.list(ctx, bucket, prefix, "")
			if err != nil {
				return nil, "", fmt.Errorf("listing artifacts/%s/%s: %w", r.Target, auditDir, err)
			}
			var objs []storage.ObjectAttrs
			for _, o := range all {
				rel := strings.TrimPrefix(o.Name, prefix)
				srv, _, _ := strings.Cut(rel, "/")
				for _, s := range AuditServers {
					if srv == s || rel == s+".audit_logs_listing" {
						objs = append(objs, o)
					}
				}
			}
			return objs, "no gathered audit logs under artifacts/" + r.Target + "/" + auditDir, nil
		})
	}
	if err := finish(); err != nil {
		return nil, err
	}
	return r, nil
}

func appendOnce(list []string, s string) []string {
	for _, l := range list {
		if l == s {
			return list
		}
	}
	return append(list, s)
}

// ProwJob is the part of prowjob.json (sigs.k8s.io/prow ProwJob) that the
// fetcher and the importer read.
type ProwJob struct {
	Metadata struct {
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Job     string `json:"job"`
		PodSpec struct {
			Containers []struct {
				Args []string `json:"args"`
			} `json:"containers"`
		} `json:"pod_spec"`
	} `json:"spec"`
	Status struct {
		URL   string `json:"url"`
		State string `json:"state"`
	} `json:"status"`
}

// Target returns the ci-operator target the job runs: the first non-empty
// --target= of its containers' arguments (openshift-eng/ai-helpers
// download_timelines.py extract_target), "" when none. The run's artifacts
// are under artifacts/<target>/.
func (pj *ProwJob) Target() string {
	for _, ct := range pj.Spec.PodSpec.Containers {
		for _, a := range ct.Args {
			if t, ok := strings.CutPrefix(a, "--target="); ok && t != "" {
				return t
			}
		}
	}
	return ""
}

// Target returns the ci-operator --target= of a prowjob.json.
func Target(prowjob []byte) (string, error) {
	var pj ProwJob
	if err := json.Unmarshal(prowjob, &pj); err != nil {
		return "", fmt.Errorf("prowjob.json: %v", err)
	}
	if t := pj.Target(); t != "" {
		return t, nil
	}
	return "", errors.New("prowjob.json names no ci-operator --target= in spec.pod_spec.containers[].args")
}

// started.json and finished.json (prow's pod-utils metadata).
type startedJSON struct {
	Timestamp int64 `json:"timestamp"`
}

type finishedJSON struct {
	Timestamp int64  `json:"timestamp"`
	Passed    *bool  `json:"passed"`
	Result    string `json:"result"`
}

// fetchMeta reads prowjob.json (the target), started.json and finished.json
// into the folder.
func (c *Client) fetchMeta(ctx context.Context, bucket *storage.BucketHandle, r *Run) error {
	ref := r.Ref()
	pj, err := c.small(ctx, bucket, ref, "prowjob.json", r)
	if err != nil {
		return fmt.Errorf("prowjob.json: %w", err)
	}
	if r.Target, err = Target(pj); err != nil {
		return err
	}
	st, err := c.small(ctx, bucket, ref, "started.json", r)
	if err != nil {
		r.Missing = appendOnce(r.Missing, "started.json: "+err.Error())
	} else {
		var s startedJSON
		if err := json.Unmarshal(st, &s); err != nil || s.Timestamp == 0 {
			r.Missing = appendOnce(r.Missing, "started.json: no timestamp (truncated JSON?)")
		} else {
			r.Started = time.Unix(s.Timestamp, 0).UTC()
		}
	}
	fin, err := c.small(ctx, bucket, ref, "finished.json", r)
	if err != nil {
		r.Missing = appendOnce(r.Missing, "finished.json: "+err.Error()+" (a run still going has none)")
	} else {
		var f finishedJSON
		if err := json.Unmarshal(fin, &f); err != nil {
			r.Missing = appendOnce(r.Missing, "finished.json: "+err.Error())
		} else {
			r.Finished = time.Unix(f.Timestamp, 0).UTC()
			r.Result = f.Result
			if r.Result == "" && f.Passed != nil {
				r.Result = map[bool]string{true: "SUCCESS", false: "FAILURE"}[*f.Passed]
			}
		}
	}
	if len(r.Missing) == 0 {
		r.addStage(StageMeta)
	}
	return nil
}

// small reads a small object, checks it is JSON, and stores it in the run's
// folder.
func (c *Client) small(ctx context.Context, bucket *storage.BucketHandle, ref Ref, rel string, r *Run) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.callTimeout())
	defer cancel()
	c.progress().Plan(1, 0)
	defer c.progress().Done()
	c.sem <- struct{}{}
	defer func() { <-c.sem }()
	b, err := readSmall(ctx, bucket, ref.Object(rel))
	if err != nil {
		return nil, err
	}
	c.progress().Transferred(int64(len(b)))
	if !json.Valid(b) {
		return nil, errors.New("truncated or invalid JSON")
	}
	if err := writeFileAtomic(filepath.Join(r.Dir, filepath.FromSlash(rel)), b); err != nil {
		return nil, err
	}
	r.addFile(rel, int64(len(b)))
	return b, nil
}

func readSmall(ctx context.Context, bucket *storage.BucketHandle, name string) ([]byte, error) {
	rd, err := bucket.Object(name).NewReader(ctx)
	if err != nil {
		return nil, describe(err)
	}
	defer rd.Close()
	if rd.Attrs.Size > maxSmall {
		return nil, fmt.Errorf("%d bytes, over the %d-byte bound of a metadata file", rd.Attrs.Size, maxSmall)
	}
	b, err := io.ReadAll(io.LimitReader(rd, maxSmall+1))
	if err != nil {
		return nil, describe(err)
	}
	if int64(len(b)) > maxSmall {
		return nil, fmt.Errorf("over the %d-byte bound of a metadata file", maxSmall)
	}
	return b, nil
}

// describe words a storage error as one line.
func describe(err error) error {
	switch {
	case errors.Is(err, storage.ErrObjectNotExist):
		return errors.New("not found (404)")
	case errors.Is(err, storage.ErrBucketNotExist):
		return errors.New("bucket not found (404)")
	case errors.Is(err, context.DeadlineExceeded):
		return errors.New("timed out")
	}
	return errors.New(strings.Join(strings.Fields(err.Error()), " "))
}

// list lists the objects under prefix (with delimiter "/": that folder
// only).
func (c *Client) list(ctx context.Context, bucket *storage.BucketHandle, prefix, delim string) ([]storage.ObjectAttrs, error) {
	var out []storage.ObjectAttrs
	err := c.pages(ctx, bucket, &storage.Query{Prefix: prefix, Delimiter: delim}, func(a *storage.ObjectAttrs) {
		if a.Name != "" {
			out = append(out, *a)
		}
	})
	return out, err
}

// pages walks a listing under one deadline (listingCalls metadata calls'
// worth: a job's history is a few pages of a thousand names).
func (c *Client) pages(ctx context.Context, bucket *storage.BucketHandle, q *storage.Query, fn func(*storage.ObjectAttrs)) error {
	_ = q.SetAttrSelection([]string{"Name", "Size", "Updated"})
	ctx, cancel := context.WithTimeout(ctx, listingCalls*c.callTimeout())
	defer cancel()
	it := bucket.Objects(ctx, q)
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return nil
		}
		if err != nil {
			return describe(err)
		}
		fn(a)
	}
}

// listingCalls is how many call deadlines one listing may take.
const listingCalls = 5

// download fetches objects into the run's folder in parallel (bounded by
// the client's limit across all runs), each streamed to a temporary file
// and renamed into place when whole.
func (c *Client) download(ctx context.Context, ref Ref, r *Run, objs []storage.ObjectAttrs) {
	var total int64
	for _, o := range objs {
		total += o.Size
	}
	c.progress().Plan(len(objs), total)
	var mu sync.Mutex
	var g errgroup.Group
	bucket := c.gcs.Bucket(ref.Bucket)
	for _, o := range objs {
		g.Go(func() error {
			defer c.progress().Done()
			rel := strings.TrimPrefix(o.Name, ref.Prefix+"/")
			n, err := c.object(ctx, bucket, o, filepath.Join(r.Dir, filepath.FromSlash(rel)))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				r.Missing = appendOnce(r.Missing, rel+": "+err.Error())
				return nil
			}
			r.addFile(rel, n)
			return nil
		})
	}
	_ = g.Wait()
}

// object streams one object to path, bounded in size and time.
func (c *Client) object(ctx context.Context, bucket *storage.BucketHandle, o storage.ObjectAttrs, dst string) (int64, error) {
	limit := c.maxObject()
	if o.Size > limit {
		return 0, fmt.Errorf("%d bytes, over the %d-byte bound (raise --max-object)", o.Size, limit)
	}
	c.sem <- struct{}{}
	defer func() { <-c.sem }()
	ctx, cancel := context.WithTimeout(ctx, c.objectTimeout())
	defer cancel()
	rd, err := bucket.Object(o.Name).NewReader(ctx)
	if err != nil {
		return 0, describe(err)
	}
	defer rd.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, err
	}
	f, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-*")
	if err != nil {
		return 0, err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	n, err := io.Copy(f, &countingReader{r: io.LimitReader(rd, limit+1), p: c.progress()})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, describe(err)
	}
	if n > limit {
		return 0, fmt.Errorf("over the %d-byte bound (raise --max-object)", limit)
	}
	if rd.Attrs.Size >= 0 && n != rd.Attrs.Size && rd.Attrs.ContentEncoding != "gzip" {
		return 0, fmt.Errorf("read %d of %d bytes", n, rd.Attrs.Size)
	}
	if strings.HasSuffix(dst, ".json") {
		if err := checkJSONEnds(tmp); err != nil {
			return 0, err
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		return 0, err
	}
	return n, nil
}

// checkJSONEnds rejects a JSON file cut short: an object file must end in
// '}'. Decoding the whole of a large timeline here would cost as much as
// importing it; the importer reports any other fault with its position.
func checkJSONEnds(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() <= maxSmall {
		b, err := io.ReadAll(f)
		if err != nil {
			return err
		}
		if !json.Valid(b) {
			return errors.New("truncated JSON")
		}
		return nil
	}
	head := make([]byte, 64)
	n, _ := f.ReadAt(head, 0)
	tail := make([]byte, 64)
	m, _ := f.ReadAt(tail, st.Size()-64)
	h := bytes.TrimSpace(head[:n])
	t := bytes.TrimSpace(tail[:m])
	if len(h) == 0 || h[0] != '{' || len(t) == 0 || t[len(t)-1] != '}' {
		return errors.New("truncated JSON")
	}
	return nil
}

type countingReader struct {
	r io.Reader
	p Progress
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	if n > 0 {
		c.p.Transferred(int64(n))
	}
	return n, err
}
