package lockstore

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// The cases come from Hermes' own code: _PROFILE_ID_RE and
// _RESERVED_NAMES (hermes_cli/profiles.py), resolve_profile_env's root
// (grandparent of a profile-shaped HERMES_HOME, else HERMES_HOME), the
// tombstone beside the profile dir (hermes_constants.py), and
// _profile_suffix/_profile_arg (hermes_cli/gateway.py).
func TestValidateProfileName(t *testing.T) {
	long := "a123456789012345678901234567890123456789012345678901234567890123" // 64
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"default", true},
		{"work", true},
		{"coder-2", true},
		{"a_b", true},
		{"0", true},
		{long, true},
		{long + "x", false}, // 65
		{"", false},
		{"Work", false},     // Hermes lowercases first; we take only the stored spelling
		{"Default", false},  // normalize_profile_name folds it; we do not
		{"-work", false},    // must start with a letter or digit
		{"_work", false},    //
		{"wo rk", false},    //
		{"work\n", false},   // Python's `$` would take it; we do not
		{"../x", false},     // never a path
		{"a/b", false},      //
		{".deleted", false}, //
		{"wörk", false},     //
		{"hermes", false},   // _RESERVED_NAMES
		{"test", false},
		{"tmp", false},
		{"root", false},
		{"sudo", false},
		{"tests", true},
	} {
		err := ValidateProfileName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateProfileName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrProfileName) {
			t.Errorf("ValidateProfileName(%q) = %v, not ErrProfileName", tc.name, err)
		}
	}
	if err := ValidateProfileName("Work"); err == nil || !contains(err.Error(), `"work"`) {
		t.Errorf("a capitalised name should name its stored spelling, got %v", err)
	}
}

func TestProfileRootAndHome(t *testing.T) {
	j := filepath.Join
	root := j(string(filepath.Separator), "home", "u", ".hermes")
	opt := j(string(filepath.Separator), "opt", "data")
	for _, tc := range []struct{ home, root string }{
		{root, root},
		{j(root, "profiles", "work"), root},
		{j(root, "profiles", "work") + string(filepath.Separator), root},
		{j(opt, "profiles", "coder"), opt}, // Docker layout
		{opt, opt},                         // a custom root is its own root
		{j(root, "other"), j(root, "other")},
		{j(root, "profiles"), j(root, "profiles")},
		{j(string(filepath.Separator), "profiles", "x"), string(filepath.Separator)},
	} {
		if got := ProfileRoot(tc.home); got != tc.root {
			t.Errorf("ProfileRoot(%q) = %q, want %q", tc.home, got, tc.root)
		}
	}
	for _, tc := range []struct {
		name, home string
		ok         bool
	}{
		{"default", root, true},
		{"work", j(root, "profiles", "work"), true},
		{"Work", "", false},
		{"../etc", "", false},
		{"test", "", false},
	} {
		got, err := ProfileHome(root, tc.name)
		if (err == nil) != tc.ok || got != tc.home {
			t.Errorf("ProfileHome(%q) = %q, %v; want %q ok=%v", tc.name, got, err, tc.home, tc.ok)
		}
	}
}

func TestNamedProfileAndSuffix(t *testing.T) {
	j := filepath.Join
	root := j(string(filepath.Separator), "home", "u", ".hermes")
	for _, tc := range []struct{ home, name string }{
		{root, ""},
		{j(root, "profiles", "work"), "work"},
		{j("/opt/data", "profiles", "coder"), "coder"},
		{j(root, "profiles", "test"), ""},     // reserved: Hermes' -p refuses it
		{j(root, "profiles", "Work"), ""},     // not a profile id: Hermes runs it bare
		{j(root, "profiles", "default"), ""},  // -p default is the root, not this
		{j(root, "profiles", ".deleted"), ""}, //
		{j(root, "work"), ""},
	} {
		got, ok := NamedProfile(tc.home)
		if got != tc.name || ok != (tc.name != "") {
			t.Errorf("NamedProfile(%q) = %q, %v; want %q", tc.home, got, ok, tc.name)
		}
		if s := ServiceSuffix(tc.home); s != tc.name {
			t.Errorf("ServiceSuffix(%q) = %q, want %q", tc.home, s, tc.name)
		}
	}
	if got, want := ProfileTombstone(j(root, "profiles", "work")), j(root, "profiles", ".deleted", "work"); got != want {
		t.Errorf("ProfileTombstone = %q, want %q", got, want)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
