// What a Go program sees of time (tests/vdso/handover.sh builds it): Go's runtime calls the
// vDSO it finds through AT_SYSINFO_EHDR itself, never libc. "realtime NS slept_ok true|false"
// after a 10 ms time.Sleep measured with time.Since (the monotonic reading); with "loop", the
// cost of time.Now() in ns per call (fastest of 100 runs of 100,000 calls: short, so that on
// a loaded machine most run unpreempted); with "threads", 4
// goroutines reading time.Now() for 2 s (run it with GOMAXPROCS=2: the runtime preempts them
// with SIGURG, which the handover's tracer passes on), "threads_ok true" if no reading of any
// went back (the monotonic reading) and each made progress; with "busy", 4 goroutines each
// running a loop without calls (the runtime preempts them with SIGURG, one stop each in the
// tracer under `vclock run`) through a fixed amount of work, "busy_ns NS" its wall time
// (tests/vdso/bench.sh).
package main

import (
	"fmt"
	"os"
	"sync"
	"time"
)

func threads() {
	var wg sync.WaitGroup
	ok := make([]bool, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			start := time.Now()
			last := time.Duration(0)
			calls := 0
			good := true
			for last < 2*time.Second {
				d := time.Since(start)
				if d < last {
					good = false
				}
				last = d
				calls++
			}
			ok[g] = good && calls > 1000
		}(g)
	}
	wg.Wait()
	fmt.Printf("threads_ok %t\n", ok[0] && ok[1] && ok[2] && ok[3])
}

func busy() {
	var wg sync.WaitGroup
	sums := make([]uint64, 4)
	start := time.Now()
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			sum := uint64(g)
			for i := uint64(0); i < 300000000; i++ {
				sum = sum*6364136223846793005 + i
			}
			sums[g] = sum
		}(g)
	}
	wg.Wait()
	fmt.Printf("busy_ns %d check %d\n", time.Since(start).Nanoseconds(), (sums[0]^sums[1]^sums[2]^sums[3])&1)
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "busy" {
		busy()
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "loop" {
		best := 0.0
		for run := 0; run < 100; run++ {
			const n = 100000
			t0 := time.Now()
			for i := 0; i < n; i++ {
				_ = time.Now()
			}
			perCall := float64(time.Since(t0).Nanoseconds()) / n
			if run == 0 || perCall < best {
				best = perCall
			}
		}
		fmt.Printf("ns_per_call %.2f\n", best)
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "threads" {
		threads()
		return
	}
	start := time.Now()
	time.Sleep(10 * time.Millisecond)
	slept := time.Since(start)
	fmt.Printf("realtime %d slept_ok %t\n", time.Now().UnixNano(), slept >= 10*time.Millisecond && slept < 10*time.Second)
}
