// Go spinner with a known chain, for Go name tests:
//   runtime.main -> main.main -> main.run -> main.levelA -> main.levelB
//     -> main.hotLeaf
// Prints "ready PID" once running.  usage: go_chain [SECONDS]
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

var sink uint64

//go:noinline
func hotLeaf(deadline time.Time) uint64 {
	for time.Now().Before(deadline) {
		for i := uint64(0); i < 100000; i++ {
			sink += i * 7
		}
	}
	return sink
}

//go:noinline
func levelB(deadline time.Time) uint64 { return hotLeaf(deadline) + 1 }

//go:noinline
func levelA(deadline time.Time) uint64 { return levelB(deadline) + 1 }

//go:noinline
func run(deadline time.Time) uint64 { return levelA(deadline) + 1 }

func main() {
	secs := 10.0
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			secs = v
		}
	}
	deadline := time.Now().Add(time.Duration(secs * float64(time.Second)))
	fmt.Printf("ready %d\n", os.Getpid())
	sink = run(deadline)
}
