// Package sweepbin lists what a sweep's bin holds, for tests and the
// bench that check a sweep left nothing behind.
package sweepbin

import (
	"os"
	"path/filepath"
	"regexp"
)

// workerBin matches the name of a sweep goroutine's bin inside the bin.
var workerBin = regexp.MustCompile(`^[1-9][0-9]{0,2}$`)

// Files lists what the bin at path holds: every name in it but its
// goroutines' bins (directories named 1, 2, ...), and every name in
// those. A sweep that finished leaves it empty.
func Files(path string) ([]string, error) {
	des, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, de := range des {
		p := filepath.Join(path, de.Name())
		if !de.IsDir() || !workerBin.MatchString(de.Name()) {
			out = append(out, p)
			continue
		}
		in, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		for _, x := range in {
			out = append(out, filepath.Join(p, x.Name()))
		}
	}
	return out, nil
}

// WorkerBins lists the goroutines' bins in the bin at path.
func WorkerBins(path string) ([]string, error) {
	des, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, de := range des {
		if de.IsDir() && workerBin.MatchString(de.Name()) {
			out = append(out, filepath.Join(path, de.Name()))
		}
	}
	return out, nil
}
