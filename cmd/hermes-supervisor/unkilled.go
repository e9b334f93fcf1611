package main

import (
	"fmt"

	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

// unkilled fails a stop or restart whose kill left processes of the
// gateway's tree alive, naming each: the stop completed, but not cleanly.
func unkilled(verb string, st *supervisor.Status) error {
	if st.LastExit == nil || len(st.LastExit.Unkilled) == 0 {
		return nil
	}
	return fmt.Errorf("%s: completed, but could not kill %s", verb, supervisor.DescribeUnkilled(st.LastExit.Unkilled))
}
