package lockstore

import (
	"os"
	"path/filepath"

	"github.com/hermes-agent/hermes-supervisor/procstate/pyparse"
)

func defaultHomeParent(getenv func(string) string) (string, string, error) {
	// Hermes strips LOCALAPPDATA with str.strip().
	if l := pyparse.Strip(getenv(WindowsHomeBase)); l != "" {
		return l, WindowsHomeName, nil
	}
	h, err := userHome(getenv)
	if err != nil {
		return "", "", err
	}
	return filepath.Join(h, "AppData", "Local"), WindowsHomeName, nil
}

func userHome(getenv func(string) string) (string, error) {
	if h := getenv("USERPROFILE"); h != "" {
		return h, nil
	}
	return os.UserHomeDir()
}
