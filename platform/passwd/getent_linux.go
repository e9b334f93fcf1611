package passwd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"time"
)

// getentPaths are where getent is looked for, never through PATH: install
// runs as root under sudo with whatever PATH the user kept.
var getentPaths = [...]string{"/usr/bin/getent", "/bin/getent"}

// fromNSS asks getent for key, a user id when byID, else a name;
// notFound is what to return when the database has no such account
// (getent's exit 2), or no getent is there.
func fromNSS(ctx context.Context, key string, byID bool, notFound error) (*user.User, error) {
	for _, p := range getentPaths {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return getent(ctx, p, key, byID, notFound)
		}
	}
	return nil, notFound
}

// lookupLimit bounds one question to the user database: NSS may ask a
// directory server over the network, and nothing here may hang on it.
const lookupLimit = 10 * time.Second

// maxEntry bounds what one entry may be: a passwd line is short, and a
// database that prints more is not answering the question.
const maxEntry = 64 << 10

// getent runs the getent at path for one passwd key.
func getent(ctx context.Context, path, key string, byID bool, notFound error) (*user.User, error) {
	ctx, cancel := context.WithTimeout(ctx, lookupLimit)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, path, "passwd", key)
	cmd.Stdout = &limitedBuffer{b: &out, left: maxEntry}
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 2:
		return nil, notFound
	case err != nil:
		return nil, fmt.Errorf("%s passwd %s: %w", path, key, err)
	}
	return parseEntry(out.String(), key, byID)
}

// limitedBuffer keeps the first left bytes written and fails the write
// after that, which ends the command.
type limitedBuffer struct {
	b    *bytes.Buffer
	left int
}

var errTooLong = errors.New("more output than one passwd entry")

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if len(p) > l.left {
		return 0, errTooLong
	}
	l.left -= len(p)
	return l.b.Write(p)
}
