//go:build !windows

package service

func password(func(string) string) (string, error) { return "", nil }
