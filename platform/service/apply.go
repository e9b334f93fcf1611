package service

import (
	"context"
	"errors"
	"fmt"
)

// Runner runs one command line.
type Runner func(ctx context.Context, argv []string) error

// Apply carries the plan out, stopping at the first failure of a step that
// may not fail.
func (p Plan) Apply(ctx context.Context, run Runner) error {
	for _, s := range p.Steps {
		var err error
		switch {
		case s.Write != nil:
			if err = writeDefinition(*s.Write); err != nil {
				err = fmt.Errorf("write %s: %w", s.Write.Path, err)
			}
		case s.Run != nil:
			if err = run(ctx, s.Run); err != nil {
				err = fmt.Errorf("%s: %w", Join(s.Run), err)
			}
		case s.Do != nil:
			// A service that did not come up says so in full already.
			if err = s.Do(ctx); err != nil && !errors.Is(err, ErrNotRunning) {
				err = fmt.Errorf("%s: %w", s.What, err)
			}
		default:
			if err = removeDefinition(s.Remove); err != nil {
				err = fmt.Errorf("remove %s: %w", s.Remove, err)
			}
		}
		if err != nil && !s.MayFail {
			return err
		}
	}
	return nil
}
