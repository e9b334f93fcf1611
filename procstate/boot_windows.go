package procstate

import (
	"strconv"
	"time"

	"golang.org/x/sys/windows"
)

// bootID derives the boot time from the tick count, rounded to 10 s so
// that the few milliseconds between the two reads do not change it. Near a
// rounding edge two supervisors of one boot may disagree: a record then
// counts as another boot's, and the process it names is left alone.
func bootID() (string, error) {
	up := windows.DurationSinceBoot()
	boot := time.Now().Add(-up).Round(10 * time.Second)
	return "boottime:" + strconv.FormatInt(boot.Unix(), 10), nil
}
