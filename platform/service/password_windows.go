package service

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/windows"
)

func password(getenv func(string) string) (string, error) {
	if pw := getenv(PasswordEnv); pw != "" {
		return pw, nil
	}
	in := windows.Handle(os.Stdin.Fd())
	var mode uint32
	if err := windows.GetConsoleMode(in, &mode); err != nil {
		return "", fmt.Errorf("%w: the service runs as you, not as LocalSystem; set %s or run install in a console to be asked", ErrNeedPassword, PasswordEnv)
	}
	account, err := currentAccount()
	if err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "The service runs as %s (never as LocalSystem); Windows stores this password to log on as you.\nPassword for %s: ", account, account)
	if err := windows.SetConsoleMode(in, (mode&^windows.ENABLE_ECHO_INPUT)|windows.ENABLE_LINE_INPUT|windows.ENABLE_PROCESSED_INPUT); err != nil {
		return "", fmt.Errorf("turn off the console's echo: %w", err)
	}
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	_ = windows.SetConsoleMode(in, mode)
	fmt.Fprintln(os.Stderr)
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		return "", fmt.Errorf("%w: no password given (%v)", ErrNeedPassword, err)
	}
	return pw, nil
}
