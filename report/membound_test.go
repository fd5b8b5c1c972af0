package report_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/repro-tools/repro/origin"
	"github.com/repro-tools/repro/report"
)

// memoryBoundMB is the README's promise: at most this much resident memory
// for any single input file, whatever its size.
const memoryBoundMB = 150

const memChildEnv = "REPRO_MEMBOUND_CHILD"

// TestMemoryBound runs the samples reader and the interval-file reader, each
// in a child process, on the inputs that used to take gigabytes (a device
// that never ends, a sparse file of zeros, a file of '[', a 500 MB
// humanMessage, a 200 MB sample line) and checks each fails with one line
// while the child's peak resident memory (VmHWM) stays under the bound.
func TestMemoryBound(t *testing.T) {
	if spec := os.Getenv(memChildEnv); spec != "" {
		memChild(spec)
		return
	}
	if testing.Short() {
		t.Skip("writes files of hundreds of megabytes")
	}
	const mb = 1 << 20
	dir := t.TempDir()
	sparse := func(name string, size int64) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return p
	}
	generated := func(name, head string, fill byte, n int64, tail string) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriterSize(f, mb)
		w.WriteString(head)
		chunk := []byte(strings.Repeat(string(fill), mb))
		for left := n; left > 0; left -= int64(len(chunk)) {
			w.Write(chunk[:min(int64(len(chunk)), left)])
		}
		w.WriteString(tail)
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return p
	}
	cases := []struct {
		name, reader string
		path         func() string
		want         string
	}{
		{"samples: /dev/zero", "samples", func() string { return "/dev/zero" }, "character device"},
		{"import: /dev/zero", "import", func() string { return "/dev/zero" }, "character device"},
		{"samples: 512 MB of zeros", "samples", func() string { return sparse("zeros.jsonl", 512*mb) }, "line 1: longer than 1 MiB"},
		{"import: 512 MB of zeros", "import", func() string { return sparse("zeros.json", 512*mb) }, "line 1, column 1"},
		{"import: 256 MB of [", "import", func() string { return generated("brackets.json", "", '[', 256*mb, "") }, `line 1, column 2: expected "{", found "["`},
		{"import: 500 MB humanMessage", "import", func() string {
			return generated("message.json", `{"items":[{"level":"Info","message":{"humanMessage":"`, 'a', 500*mb, `"}}]}`)
		}, "items[0] is larger than 4 MiB"},
		{"import, filtered: 500 MB humanMessage", "filtered", func() string {
			return generated("message.json", `{"items":[{"level":"Info","message":{"humanMessage":"`, 'a', 500*mb, `"}}]}`)
		}, "larger than 4 MiB"},
		{"samples: 200 MB line", "samples", func() string {
			return generated("line.jsonl", `{"backend":"kube-api","connection":"new","seq":0,"start":"2025-06-01T12:00:00Z","error":"`, 'e', 200*mb, "\"}\n")
		}, "line 1: longer than 1 MiB"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path()
			defer func() {
				if strings.HasPrefix(path, dir) {
					os.Remove(path)
				}
			}()
			cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryBound$", "-test.count=1")
			cmd.Env = append(os.Environ(), memChildEnv+"="+tc.reader+":"+path)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			var hwm int64
			var msg string
			for _, l := range strings.Split(string(out), "\n") {
				if v, ok := strings.CutPrefix(l, "VmHWM-kB "); ok {
					hwm, _ = strconv.ParseInt(v, 10, 64)
				}
				if v, ok := strings.CutPrefix(l, "error "); ok {
					msg = v
				}
			}
			if hwm == 0 {
				t.Fatalf("child printed no VmHWM:\n%s", out)
			}
			t.Logf("peak RSS %.1f MB: %s", float64(hwm)/1024, msg)
			if hwm > memoryBoundMB*1024 {
				t.Errorf("peak RSS %d kB, over the %d MB bound", hwm, memoryBoundMB)
			}
			if !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q, want one line with %q", msg, tc.want)
			}
		})
	}
}

// memChild reads one input with one reader and prints its error and its
// peak resident memory, then exits.
func memChild(spec string) {
	reader, path, _ := strings.Cut(spec, ":")
	var err error
	switch reader {
	case "samples":
		_, err = report.LoadSamples(path)
	case "import":
		_, err = origin.ReadFile(path)
	case "filtered":
		_, err = origin.ReadFileFiltered(path, func([]byte) bool { return true })
	}
	fmt.Printf("error %v\n", err)
	status, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			fmt.Printf("VmHWM-kB %s\n", strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
		}
	}
	os.Exit(0)
}
