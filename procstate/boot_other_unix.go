//go:build unix && !linux

package procstate

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

func bootID() (string, error) {
	tv, err := unix.SysctlTimeval("kern.boottime")
	if err != nil {
		return "", fmt.Errorf("read kern.boottime: %w", err)
	}
	return "boottime:" + strconv.FormatInt(tv.Sec, 10) + "." + strconv.FormatInt(int64(tv.Usec), 10), nil
}
