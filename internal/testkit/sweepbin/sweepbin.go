// Package sweepbin lists what a sweep's bin holds, for tests and the
// bench that check a sweep left nothing behind.
package sweepbin

import (
	"os"
	"path/filepath"
)

// Files lists what the bin at path holds: every name in it but its
// goroutines' bins (its subdirectories), and every name in those. A
// sweep that finished leaves it empty.
func Files(path string) ([]string, error) {
	out, subs, err := split(path)
	for _, sub := range subs {
		if err != nil {
			break
		}
		var in, deeper []string
		in, deeper, err = split(sub)
		out = append(append(out, in...), deeper...) // a sweep makes none
	}
	return out, err
}

// WorkerBins lists the goroutines' bins in the bin at path.
func WorkerBins(path string) ([]string, error) {
	_, subs, err := split(path)
	return subs, err
}

// split lists dir's names as paths, its subdirectories apart.
func split(dir string) (names, subs []string, _ error) {
	des, err := os.ReadDir(dir)
	for _, de := range des {
		p := filepath.Join(dir, de.Name())
		if de.IsDir() {
			subs = append(subs, p)
		} else {
			names = append(names, p)
		}
	}
	return names, subs, err
}
