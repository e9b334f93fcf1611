package service

// Password returns the installing user's password for the service
// account, which only Windows needs: its service manager runs the service
// as that user and stores the password to log on. There it is PasswordEnv
// when set, else asked on the console without echo, and without either
// the error wraps ErrNeedPassword. Elsewhere it is "" and nil: systemd and
// launchd run the service as its user without a password.
func Password(getenv func(string) string) (string, error) { return password(getenv) }
