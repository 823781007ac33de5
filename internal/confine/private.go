package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// PrivateParent is the folder, in the system's temporary folder, that
// holds this user's confined renders' private folders: created on first
// use, and refused unless it is a folder this user owns that no one else
// may read or write (another user could otherwise read a render's files,
// or place a link where it writes).
func PrivateParent() (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("helm-inject-confined-%d", os.Getuid()))
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return "", fmt.Errorf("creating %s for confined renders: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("%s: %w", dir, err)
	}
	if !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 || !ownedBy(fi, os.Getuid()) {
		return "", fmt.Errorf("%s is not a private folder of this user (a folder, mode 0700, owned by uid %d): remove it", dir, os.Getuid())
	}
	return dir, nil
}

// renderPrefix starts the name of a render's private folder; the process
// ID that made it follows.
const renderPrefix = "render-"

// NewRenderFolder makes the private folder of one render in parent (from
// PrivateParent), named for this process, after removing the folders of
// renders whose process is gone: a render killed by Argo CD's timeout
// (SIGKILL) never ran its cleanup, and its folder holds the injectors'
// input, rendered Secrets included.
func NewRenderFolder(parent string) (string, error) {
	RemoveStaleRenders(parent, processAlive)
	dir, err := os.MkdirTemp(parent, fmt.Sprintf("%s%d-", renderPrefix, os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("creating the private folder of a confined render: %w", err)
	}
	return dir, nil
}

// RemoveStaleRenders removes the render folders in parent whose process
// alive says is gone, and returns their names. A folder whose name holds
// no process ID is left alone.
func RemoveStaleRenders(parent string, alive func(pid int) bool) []string {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), renderPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || alive(pid) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(parent, e.Name())); err == nil || errors.Is(err, os.ErrNotExist) {
			removed = append(removed, e.Name())
		}
	}
	return removed
}
