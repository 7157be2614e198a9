// What a Go program sees of time (tests/vdso/handover.sh builds it): Go's runtime calls the
// vDSO it finds through AT_SYSINFO_EHDR itself, never libc. "realtime NS slept_ok true|false"
// after a 10 ms time.Sleep measured with time.Since (the monotonic reading); with "loop", the
// cost of time.Now() in ns per call (fastest of 5 runs of 2,000,000 calls).
package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "loop" {
		best := 0.0
		for run := 0; run < 5; run++ {
			const n = 2000000
			t0 := time.Now()
			for i := 0; i < n; i++ {
				_ = time.Now()
			}
			perCall := float64(time.Since(t0).Nanoseconds()) / n
			if run == 0 || perCall < best {
				best = perCall
			}
		}
		fmt.Printf("%.2f ns/call\n", best)
		return
	}
	start := time.Now()
	time.Sleep(10 * time.Millisecond)
	slept := time.Since(start)
	fmt.Printf("realtime %d slept_ok %t\n", time.Now().UnixNano(), slept >= 10*time.Millisecond && slept < 10*time.Second)
}
