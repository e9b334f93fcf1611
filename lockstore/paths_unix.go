//go:build unix

package lockstore

import (
	"os"
)

func defaultHomeParent(getenv func(string) string) (string, string, error) {
	h, err := userHome(getenv)
	return h, ".hermes", err
}

func userHome(getenv func(string) string) (string, error) {
	if h := getenv("HOME"); h != "" {
		return h, nil
	}
	return os.UserHomeDir()
}
