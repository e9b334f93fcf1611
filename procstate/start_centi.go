//go:build !linux

package procstate

import "time"

// year2000 is 2000-01-01 in centiseconds since the epoch.
const year2000 = 946_684_800 * 100

// compareStart: Hermes records round(psutil create_time*100), and gopsutil
// reads the create time in milliseconds and rounds on its own, so the two
// may be one centisecond apart. A recorded value that cannot be such a time
// (old Hermes wrote a string hash on Windows) says nothing: unknown.
func compareStart(recorded int64, l Live, now time.Time) (same, known bool) {
	if recorded < year2000 || recorded > now.Add(24*time.Hour).UnixMilli()/10 {
		return false, false
	}
	d := recorded - *l.StartTime
	return d >= -1 && d <= 1, true
}
