// Package debugprof writes CPU and heap profiles of a whole repro process
// when asked to by environment variables, so that a command's cost (init,
// client-go, the progress display, the report) can be profiled as a user
// runs it, without a flag on every command:
//
//	REPRO_CPUPROFILE=FILE   CPU profile from start to exit
//	REPRO_MEMPROFILE=FILE   heap profile (allocations and in-use) at exit
package debugprof

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// Start begins what the environment asks for and returns the function that
// finishes it; the caller runs it before the process exits (os.Exit skips
// deferred calls). With neither variable set it does nothing.
func Start() (stop func()) {
	var done []func()
	if path := os.Getenv("REPRO_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "repro: REPRO_CPUPROFILE:", err)
		} else {
			done = append(done, func() { pprof.StopCPUProfile(); _ = f.Close() })
		}
	}
	if path := os.Getenv("REPRO_MEMPROFILE"); path != "" {
		done = append(done, func() {
			f, err := os.Create(path)
			if err == nil {
				// A GC first, so that in-use figures are the live heap's.
				runtime.GC()
				err = pprof.Lookup("heap").WriteTo(f, 0)
				_ = f.Close()
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "repro: REPRO_MEMPROFILE:", err)
			}
		})
	}
	return func() {
		for _, d := range done {
			d()
		}
	}
}
