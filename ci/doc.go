// Package ci brings OpenShift CI runs onto the local disk, where the rest of
// repro reads them: prow and gcsweb URLs, gs:// URIs and a job's history are
// turned into run folders under a local cache.
//
// It does what TRT's disruption analysis does by hand (openshift-eng/ai-helpers
// plugins/ci/skills/analyze-disruption: download_timelines.py reads the
// ci-operator target from prowjob.json's spec.pod_spec.containers[0].args
// "--target=", then fetches the run's e2e-timelines_spyglass_*.json from the
// test-platform-results bucket; find_disruption_runs.py finds runs through
// Sippy's /api/jobs/runs/disruption), compiled, in parallel and cached.
//
// A run on disk is a folder whose relative paths are the object names under
// the run's prefix in the bucket: gs://BUCKET/logs/JOB/BUILD/X is
// CACHE/BUCKET/logs/JOB/BUILD/X. Beside them, repro-ci-run.json (RunFile)
// records what was fetched, so that offline reads know whether the folder is
// complete.
//
// Reads are anonymous (the buckets are public) through
// cloud.google.com/go/storage; that library's STORAGE_EMULATOR_HOST switch
// points them at a mirror or an emulator instead. Every call has a deadline
// and every object a size bound; large files stream to disk and are renamed
// into place only when whole, so a killed fetch never leaves a half file
// that counts.
package ci
