package write

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/repro-tools/repro/report"
)

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes junit.xml: one test case per backend-connection, named as
// origin names its disruption tests, failing when the poller's disruption is
// over limit (limit <= 0: the cases only report).
func WriteJUnit(w io.Writer, suite string, a *report.Analysis, limit time.Duration) error {
	s := junitSuite{Name: suite, Time: fmt.Sprintf("%.3f", a.To.Sub(a.From).Seconds())}
	over := map[string]bool{}
	for _, p := range report.OverLimit(a, limit) {
		over[p.Name] = true
	}
	for _, p := range a.Pollers {
		c := junitCase{
			Name:      fmt.Sprintf("[sig-api-machinery] disruption/%s connection/%s should be available throughout the test", p.Backend, p.Connection),
			Classname: "repro.disruption",
			Time:      fmt.Sprintf("%.3f", p.Last.Sub(p.First).Seconds()),
			SystemOut: fmt.Sprintf("%s: %d samples, %d failed, disrupted %s in %d intervals", p.Name, p.Samples, p.Failures, formatMs(p.Disrupted), p.Intervals),
		}
		if over[p.Name] {
			s.Failures++
			c.Failure = &junitFailure{
				Message: fmt.Sprintf("%s was disrupted for %s, over the limit of %s", p.Name, formatMs(p.Disrupted), formatMs(limit)),
				Text:    disruptionText(a, p.Name),
			}
		}
		s.Cases = append(s.Cases, c)
	}
	s.Tests = len(s.Cases)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{s}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// disruptionText lists a poller's intervals for a failing test case.
func disruptionText(a *report.Analysis, name string) string {
	var b strings.Builder
	for i := range a.Intervals {
		iv := &a.Intervals[i]
		if iv.Name == name && iv.Disruption() {
			fmt.Fprintf(&b, "%s - %s (%s) %s: %s\n", iv.From.UTC().Format("15:04:05.000"), iv.To.UTC().Format("15:04:05.000"), formatMs(iv.Duration()), iv.Class, iv.Message)
		}
	}
	return b.String()
}
