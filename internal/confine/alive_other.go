//go:build !unix

package confine

// processAlive cannot tell here: every render folder is kept.
func processAlive(int) bool { return true }
