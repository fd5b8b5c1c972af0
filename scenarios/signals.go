package scenarios

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/repro-tools/repro/results"
)

// maxSignalLine bounds one line read from another source's signals file.
const maxSignalLine = 1 << 20

// CopySignals appends every Signal line of src (the lab load balancer's
// health records) to the folder's signals through its one writer
// (results.Folder.SignalWriter), and says how many.
func CopySignals(src string, folder *results.Folder) (int, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	w, err := folder.SignalWriter()
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), maxSignalLine)
	n, line := 0, 0
	for sc.Scan() {
		line++
		var s results.Signal
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			// A line cut by a crash is skipped, not fatal: the rest is kept.
			continue
		}
		if err := w.Write(s); err != nil {
			return n, err
		}
		n++
	}
	if err := sc.Err(); err != nil {
		return n, fmt.Errorf("%s line %d: %w", src, line+1, err)
	}
	return n, nil
}
