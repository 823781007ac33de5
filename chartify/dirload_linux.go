//go:build linux

package chartify

import (
	"io/fs"
	"syscall"
	"time"
)

// readChartFile reads the regular file path as Helm's BudgetedReader
// does (all of it, or a budget error once it holds more than budget
// bytes), and its modification time, with open, fstat, reads and close:
// os.Open would also make the descriptor non-blocking and try the
// network poller, three more system calls a file that only cost time.
func readChartFile(path string, budget int64) ([]byte, time.Time, error) {
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
	if st.Size > budget {
		return nil, modTime, overBudget(budget)
	}
	// One byte more than the size: a read that fills it means the file
	// grew since, and reading goes on until the end or the budget.
	data := make([]byte, 0, st.Size+1)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		var n int
		err := ignoringEINTR(func() (err error) {
			n, err = syscall.Read(fd, data[len(data):cap(data)])
			return err
		})
		if err != nil {
			return nil, modTime, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n <= 0 {
			return data, modTime, nil
		}
		if data = data[:len(data)+n]; int64(len(data)) > budget {
			return nil, modTime, overBudget(budget)
		}
	}
}

func ignoringEINTR(f func() error) error {
	for {
		if err := f(); err != syscall.EINTR {
			return err
		}
	}
}
