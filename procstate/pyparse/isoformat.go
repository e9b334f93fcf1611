package pyparse

import (
	"errors"
	"time"
	"unicode/utf8"
)

// errISO is fromisoformat's ValueError.
var errISO = errors.New("invalid isoformat string")

// FromISOFormat parses s as Python's datetime.fromisoformat (its C
// implementation) does: a date YYYY-MM-DD, YYYYMMDD, YYYY-Www[-D] or
// YYYYWww[D]; then any one character; then HH[:MM[:SS[{.,}f+]]] or the
// basic HHMMSS form; then Z or an offset ±HH[:MM[:SS[.f+]]] (basic forms
// too). That is 3.11's reading (3.12 and 3.13 read alike), and 3.14 adds
// the end of a day, 24:00, which 3.11 rejects. aware is false for a time
// without an offset, which Hermes cannot subtract from an aware now (a
// TypeError: the marker counts as stale).
func FromISOFormat(s string) (t time.Time, aware bool, err error) {
	if !utf8.ValidString(s) || len(s) < 7 {
		return time.Time{}, false, errISO
	}
	// Any one character may separate date and time; a non-ASCII one is
	// several bytes here, one character to Python.
	sep := separatorAt(s)
	if sep < 0 || sep > len(s) {
		return time.Time{}, false, errISO
	}
	y, m, d, ok := isoDate(s[:sep])
	if !ok {
		return time.Time{}, false, errISO
	}
	var h, mi, sec, us int
	var off *time.Duration
	if sep < len(s) {
		_, size := utf8.DecodeRuneInString(s[sep:])
		if h, mi, sec, us, off, ok = isoTime(s[sep+size:]); !ok {
			return time.Time{}, false, errISO
		}
	}
	if m < 1 || m > 12 || d < 1 || d > daysIn(y, m) || h > 24 || mi > 59 || sec > 59 {
		return time.Time{}, false, errISO
	}
	nextDay := 0
	if h == 24 {
		// Python 3.14 reads ISO 8601's end of day, 24:00[:00[.000000]],
		// as the next day's midnight (3.11 raises); a date past 9999 it
		// cannot hold. Read so, a marker 3.14 finds fresh is fresh here.
		if mi != 0 || sec != 0 || us != 0 || y == 9999 && m == 12 && d == 31 {
			return time.Time{}, false, errISO
		}
		h, nextDay = 0, 1
	}
	t = time.Date(y, time.Month(m), d+nextDay, h, mi, sec, us*1000, time.UTC)
	if off == nil {
		return t, false, nil
	}
	return t.Add(-*off), true, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// separatorAt is where the date ends, by the shape of its first bytes.
func separatorAt(s string) int {
	n := len(s)
	switch {
	case n == 7:
		return 7
	case s[4] == '-' && s[5] == 'W':
		if n < 8 {
			return -1
		}
		if n > 8 && s[8] == '-' {
			if n == 9 {
				return -1
			}
			if n > 10 && isDigit(s[10]) {
				return 8
			}
			return 10
		}
		return 8
	case s[4] == '-':
		return 10
	case s[4] == 'W':
		i := 7
		for i < n && isDigit(s[i]) {
			i++
		}
		if i < 9 {
			return i
		}
		if i%2 == 0 {
			return 7
		}
		return 8
	}
	return 8
}

func digits(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	v := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		v = v*10 + int(s[i]-'0')
	}
	return v, true
}

func isoDate(s string) (y, m, d int, ok bool) {
	if len(s) != 7 && len(s) != 8 && len(s) != 10 {
		return 0, 0, 0, false
	}
	if y, ok = digits(s[:4]); !ok || y < 1 {
		return 0, 0, 0, false
	}
	dash := s[4] == '-'
	p := 4
	if dash {
		p++
	}
	if s[p] == 'W' {
		p++
		week, ok := digits(s[p:min(p+2, len(s))])
		if !ok || p+2 > len(s) {
			return 0, 0, 0, false
		}
		p += 2
		day := 1
		if p < len(s) {
			if (s[p] == '-') != dash {
				return 0, 0, 0, false
			}
			if dash {
				p++
			}
			if day, ok = digits(s[p:]); !ok || len(s[p:]) != 1 {
				return 0, 0, 0, false
			}
		}
		return isoWeek(y, week, day)
	}
	if p+2 > len(s) {
		return 0, 0, 0, false
	}
	if m, ok = digits(s[p : p+2]); !ok {
		return 0, 0, 0, false
	}
	p += 2
	if p >= len(s) || (s[p] == '-') != dash {
		return 0, 0, 0, false
	}
	if dash {
		p++
	}
	if d, ok = digits(s[p:]); !ok || len(s[p:]) != 2 {
		return 0, 0, 0, false
	}
	return y, m, d, true
}

// isoWeek is date.fromisocalendar: Monday of week 1 is the Monday of the
// week holding January 4th.
func isoWeek(y, week, day int) (int, int, int, bool) {
	if day < 1 || day > 7 || week < 1 || week > 53 {
		return 0, 0, 0, false
	}
	jan4 := time.Date(y, 1, 4, 0, 0, 0, 0, time.UTC)
	monday := jan4.AddDate(0, 0, -((int(jan4.Weekday()) + 6) % 7))
	t := monday.AddDate(0, 0, (week-1)*7+day-1)
	if week == 53 {
		if _, w := monday.AddDate(0, 0, 52*7).ISOWeek(); w != 53 {
			return 0, 0, 0, false
		}
	}
	return t.Year(), int(t.Month()), t.Day(), true
}

// isoTime parses the time and its offset (seconds and microseconds east
// of UTC, nil when naive). Before an offset the C parser tolerates stray
// characters its Python twin does not ("10:00:00x+00:00", "10 +00:00",
// an empty fraction); this reading accepts a superset of those, since
// reading a fresh marker as fresh is what must never fail.
func isoTime(s string) (h, m, sec, us int, off *time.Duration, ok bool) {
	tz := 0
	for tz < len(s) && s[tz] != 'Z' && s[tz] != '+' && s[tz] != '-' {
		tz++
	}
	if tz == len(s) {
		return 0, 0, 0, 0, nil, true // naive: Hermes' subtraction raises
	}
	c, ok := hhmmssff(s[:tz], true)
	if !ok {
		return 0, 0, 0, 0, nil, false
	}
	var o time.Duration
	if s[tz] == 'Z' {
		if tz != len(s)-1 {
			return 0, 0, 0, 0, nil, false
		}
	} else {
		z := s[tz+1:]
		if len(z) <= 1 || len(z) == 3 {
			return 0, 0, 0, 0, nil, false
		}
		zc, ok := hhmmssff(z, false)
		if !ok || zc[0] > 23 || zc[1] > 59 || zc[2] > 59 {
			return 0, 0, 0, 0, nil, false
		}
		o = time.Duration(zc[0])*time.Hour + time.Duration(zc[1])*time.Minute +
			time.Duration(zc[2])*time.Second + time.Duration(zc[3])*time.Microsecond
		if s[tz] == '-' {
			o = -o
		}
	}
	return c[0], c[1], c[2], c[3], &o, true
}

// hhmmssff parses HH[:?MM[:?SS]][{.,}f*], the colons all or none; with
// lenient, whatever follows is ignored.
func hhmmssff(s string, lenient bool) ([4]int, bool) {
	var c [4]int
	p, colons := 0, false
	for i := 0; i < 3 && p < len(s); i++ {
		if s[p] == '.' || s[p] == ',' {
			break
		}
		if i > 0 {
			if i == 1 {
				colons = s[p] == ':'
			}
			if colons {
				if s[p] != ':' {
					break
				}
				p++
			}
		}
		if len(s)-p < 2 {
			if i == 0 || !lenient {
				return c, false
			}
			p = len(s)
			break
		}
		v, ok := digits(s[p : p+2])
		if !ok {
			if i == 0 || !lenient {
				return c, false
			}
			break
		}
		c[i] = v
		p += 2
	}
	if p < len(s) && (s[p] == '.' || s[p] == ',') {
		p++
		q := p
		for q < len(s) && isDigit(s[q]) {
			q++
		}
		f := s[p:q]
		us, _ := digits(f[:min(6, len(f))])
		for i := len(f); i < 6; i++ {
			us *= 10
		}
		c[3] = us
		if len(f) == 0 && !lenient {
			return c, false
		}
		p = q
	}
	return c, p == len(s) || lenient
}

func daysIn(y, m int) int {
	return time.Date(y, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
