package service

import (
	"errors"
	"os"
	"testing"
)

// The password comes from PasswordEnv; without it and without a console
// to ask on, install stops with ErrNeedPassword rather than hang.
func TestPassword(t *testing.T) {
	if pw, err := Password(func(k string) string { return map[string]string{PasswordEnv: "s3cret"}[k] }); err != nil || pw != "s3cret" {
		t.Fatalf("Password from the environment = %q, %v", pw, err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	stdin := os.Stdin
	os.Stdin = r // a pipe, as under a script or CI: no console to ask on
	defer func() { os.Stdin = stdin }()
	if _, err := Password(func(string) string { return "" }); !errors.Is(err, ErrNeedPassword) {
		t.Fatalf("Password without a console: %v, want ErrNeedPassword", err)
	}
}
