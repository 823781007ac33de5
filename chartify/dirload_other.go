//go:build !linux

package chartify

import (
	"io"
	"os"
	"time"
)

// readChartFile reads the file path as Helm's BudgetedReader does (all of
// it, or a budget error once it holds more than budget bytes), and its
// modification time.
func readChartFile(path string, budget int64) ([]byte, time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, time.Time{}, err
	}
	if fi.Size() > budget {
		return nil, fi.ModTime(), overBudget(budget)
	}
	data, err := io.ReadAll(io.LimitReader(f, budget+1))
	if err != nil {
		return nil, fi.ModTime(), err
	}
	if int64(len(data)) > budget {
		return nil, fi.ModTime(), overBudget(budget)
	}
	return data, fi.ModTime(), nil
}
