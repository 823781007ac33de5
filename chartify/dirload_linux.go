//go:build linux

package chartify

import (
	"io/fs"
	"syscall"
	"time"
)

// readChartFile reads the regular file path as Helm's BudgetedReader
// does (all of it, or errOverBudget once it would hold more than b has
// left: its size is taken from b before it is read, so a file that
// would pass the budget is not read at all), and its modification time,
// with open, fstat, reads and close: os.Open would also make the
// descriptor non-blocking and try the network poller, three more system
// calls a file that only cost time. What it took from b is given back
// unless it returns the file.
func readChartFile(path string, b *readBudget) ([]byte, time.Time, error) {
	var fd int
	err := ignoringEINTR(func() (err error) {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, time.Time{}, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := ignoringEINTR(func() error { return syscall.Fstat(fd, &st) }); err != nil {
		return nil, time.Time{}, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	modTime := time.Unix(st.Mtim.Unix())
	size := max(st.Size, 0)
	if !b.take(size) {
		return nil, modTime, errOverBudget
	}
	read := func(p []byte) (n int, err error) {
		err = ignoringEINTR(func() (err error) {
			n, err = syscall.Read(fd, p)
			return err
		})
		if err != nil {
			return 0, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		return n, nil
	}
	// One byte more than the size: a read that fills it means the file
	// grew since, and reading goes on until the end or the budget.
	data, taken, err := readPast(read, make([]byte, 0, size+1), b, size)
	if err != nil {
		b.give(taken)
		return nil, modTime, err
	}
	return data, modTime, nil
}

func ignoringEINTR(f func() error) error {
	for {
		if err := f(); err != syscall.EINTR {
			return err
		}
	}
}
