// Package testkit holds the test servers and fixtures that the tests of
// more than one package use, so each is written once. Only tests import it.
package testkit

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/results"
)

// Silent starts a TLS server that answers every request with prefix (status
// 200 and the bytes, flushed; with an empty prefix, nothing at all, not even
// a status) and then holds it open until the client goes away or the test
// ends: a server that accepts a call and goes silent. It returns a client
// config for it (the test certificate is not verified).
func Silent(t testing.TB, prefix string) *rest.Config {
	t.Helper()
	release := make(chan struct{})
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if prefix != "" {
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, prefix)
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	// Cleanups run last first: the held requests are let go, then the
	// server closes (Close waits for them).
	t.Cleanup(ts.Close)
	t.Cleanup(func() { close(release) })
	return &rest.Config{Host: ts.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
}

// Set sets *p to v for the rest of the test and returns what it was.
func Set[T any](t testing.TB, p *T, v T) (old T) {
	old = *p
	*p = v
	t.Cleanup(func() { *p = old })
	return old
}

// WriteJSONL writes items to path through results' JSONL writer, one line
// each, as the program writes its folders' files.
func WriteJSONL[T any](t testing.TB, path string, items []T) {
	t.Helper()
	w, err := results.CreateJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range items {
		if err := w.Write(&items[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
