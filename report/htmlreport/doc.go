// Package htmlreport renders report.html, the self-contained page of a
// results folder, and the comparison page of several folders.
//
// The page is one HTML file with its script, style and data embedded
// (go:embed; no CDN, no network, works from file://). It shows the run's
// description and summary table, a timeline with one lane per
// backend-connection (every sample a mark coloured by its result, every
// disruption interval a bar labelled with its length in ms), one lane per
// node for the rollout (terminating, stopped serving, starting, ready, with
// the termination events as marks), the baseline, rollout and cool-down
// shaded, a latency-over-time plot per backend, and the list of intervals
// with their place in the rollout. Hovering a mark shows the request's
// phases (DNS, connect, TLS, first byte), status, error, Audit-ID and, on
// the lab, the apiserver that served it. Wheel/drag/buttons zoom and pan
// down to single samples; report.html#t=FROM,TO links a view and
// report.html#sample=LANE:SEQ one request.
//
// The drawing is hand-written canvas code (assets/page.js), no charting
// library. The data is columnar (one array per field, times as ms offsets
// from the run's zero, start times and sequence numbers delta-encoded),
// gzip-compressed and base64-encoded; the browser inflates it with
// DecompressionStream. Every sample is embedded, so any zoom level can show
// any sample; for wide zoom levels each lane carries downsampled index
// lists (Levels) that keep per bucket the first, fastest and slowest sample
// and always every failed sample, its neighbours and the samples inside or
// next to a disruption. Large runs (over 60,000 samples) keep the Audit-ID
// of failed, slow and gap-adjacent samples only; the rest are found in
// samples.jsonl by their sequence number, which the page shows.
//
// This package does not import package report (report/write calls it from
// Rebuild); write.WriteCompareHTML loads folders and calls WriteCompare.
// The page's script records what it drew in data-* attributes of the
// #drawn element, which the browser tests read from the dumped DOM.
package htmlreport
