package results

import "time"

// CIRunManifestFile is the note the CI fetcher (package ci) writes in each
// CI run folder it fills, and the importer reads: what was fetched, from
// where, and what is missing.
const CIRunManifestFile = "repro-ci-run.json"

// CIRunManifest is what CIRunManifestFile holds: one CI run's folder, as
// the fetcher wrote it.
type CIRunManifest struct {
	Bucket  string `json:"bucket"`
	Job     string `json:"job"`
	Build   string `json:"build"`
	Target  string `json:"target"`
	ProwURL string `json:"prowURL"`
	// FetchedAt is when the folder was last written; the cache evicts the
	// oldest first.
	FetchedAt time.Time `json:"fetchedAt"`
	// Complete says every stage asked for was fetched whole and the run
	// had finished: a later fetch reads the cache only.
	Complete bool `json:"complete"`
	// Missing holds one line per file or stage that could not be fetched.
	Missing []string `json:"missing"`

	// Prefix is the run's object prefix; NamedBucket the bucket the input
	// named (origin-ci-test for older URLs).
	Prefix      string `json:"prefix"`
	NamedBucket string `json:"namedBucket,omitempty"`
	Repo        string `json:"repo,omitempty"`
	PR          string `json:"pr,omitempty"`
	// Stages fetched (StageMeta...), and the files, relative to the folder.
	Stages []string `json:"stages"`
	Files  []string `json:"files"`
	// Bytes is the size of the files fetched.
	Bytes int64 `json:"bytes"`
	// Started and Finished are started.json's and finished.json's
	// timestamps; Result finished.json's result (SUCCESS, FAILURE, ...).
	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
	Result   string    `json:"result,omitempty"`
}
