// Package compare sets results folders side by side (repro compare, and the
// sweep's step-to-step verdicts): per backend-connection, B against A by a
// rank test and a threshold, with the graded outcomes beside them. It reads
// folders through package report's model (LoadSamples, LoadTimeline, Place)
// and writes the comparison as text or JSON (schema CompareSchema).
package compare
