//go:build !linux

package alarm

// firedForTest reports a fire nobody has waited for yet, without taking it.
func (a *Alarm) firedForTest() bool { return len(a.s.fired) == 1 }
