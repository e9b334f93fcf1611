package lockstore

import (
	"errors"
	"io"
	"os"
	"strconv"
)

func listPIDs() (map[int]bool, bool) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, false
	}
	defer d.Close()
	out := map[int]bool{}
	for {
		names, err := d.Readdirnames(1024)
		for _, n := range names {
			if pid, err := strconv.Atoi(n); err == nil && pid > 0 {
				out[pid] = true
			}
		}
		if errors.Is(err, io.EOF) {
			return out, true
		}
		if err != nil {
			return nil, false
		}
	}
}
