// Package reporoot finds the checkout a test or development program runs
// in. It imports nothing heavier than os, so a program that must start
// quickly (the demo's offline half) can use it.
package reporoot

import (
	"errors"
	"os"
	"path/filepath"
)

// Find returns the folder of the nearest go.mod above the working
// directory.
func Find() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: run this from the checkout")
		}
		dir = parent
	}
}
