//go:build linux || darwin

package inject

import (
	"os"
	"syscall"
)

// identify is the file's device, inode, size, modification and change
// times.
func identify(fi os.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	mtime, ctime := statTimes(st)
	return fileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: st.Size, Mtime: mtime, Ctime: ctime}, true
}

// private reports whether the file is the user uid's and no one else may
// write to it.
func private(fi os.FileInfo, uid int) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int64(st.Uid) == int64(uid) && fi.Mode().Perm()&0o022 == 0
}
