// Package parallel runs independent steps over a slice on every CPU: reading
// and injecting rendered documents are per-document work, and a render of a
// large chart holds thousands of them.
package parallel

import (
	"runtime"
	"sync"
)

// minPerWorker keeps small inputs on one goroutine, where starting workers
// would cost more than it saves.
const minPerWorker = 16

// For calls fn(i) for every i in [0, n), spread over GOMAXPROCS goroutines
// in contiguous blocks. fn must only touch what belongs to index i. The
// returned error is the one of the lowest index, so a failure reads the same
// however the work was scheduled.
func For(n int, fn func(i int) error) error {
	workers := min(runtime.GOMAXPROCS(0), n/minPerWorker)
	if workers <= 1 {
		for i := range n {
			if err := fn(i); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*n/workers, (w+1)*n/workers
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				if err := fn(i); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	// Blocks are in index order, so the first failed block holds the lowest
	// failing index.
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
