package inject

import "syscall"

// statTimes is the modification and change times, in nanoseconds.
func statTimes(st *syscall.Stat_t) (mtime, ctime int64) {
	return st.Mtim.Nano(), st.Ctim.Nano()
}
