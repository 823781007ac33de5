//go:build !linux

package chartify

import (
	"os"
	"time"
)

// readChartFile reads the file path as Helm's BudgetedReader does (all of
// it, or errOverBudget once it would hold more than b has left: its size
// is taken from b before it is read, so a file that would pass the
// budget is not read at all), and its modification time. What it took
// from b is given back unless it returns the file.
func readChartFile(path string, b *readBudget) ([]byte, time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, time.Time{}, err
	}
	size := max(fi.Size(), 0)
	if !b.take(size) {
		return nil, fi.ModTime(), errOverBudget
	}
	data, taken, err := readPast(f.Read, make([]byte, 0, size+1), b, size)
	if err != nil {
		b.give(taken)
		return nil, fi.ModTime(), err
	}
	return data, fi.ModTime(), nil
}
