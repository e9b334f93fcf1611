package lockstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// TestSameHomeThroughAnotherDrive: one folder spelled through two drives
// is one home to Hermes, whose resolve() asks Windows for each path's
// final name (GetFinalPathNameByHandle), and so sees through a drive
// made by subst, a mapped drive or a junction, none of which
// filepath.EvalSymlinks follows. Judged another home's, a live gateway's
// pid file or state would be stale. The other drive is one subst makes
// (DefineDosDevice) on Windows; Wine's subst makes nothing, and there its
// Z: drive, the whole Unix tree, shows the folder under a second drive.
func TestSameHomeThroughAnotherDrive(t *testing.T) {
	dir := testdir.New(t)
	for _, d := range []string{"hermes", "other"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	alias := otherDriveFor(t, dir)
	home := filepath.Join(dir, "hermes")
	for _, tt := range []struct {
		name, recorded, home string
		same                 bool
	}{
		{"recorded through the other drive", filepath.Join(alias, "hermes"), home, true},
		{"this home through the other drive", home, filepath.Join(alias, "hermes"), true},
		{"another folder through the other drive", filepath.Join(alias, "other"), home, false},
		{"a missing folder through the other drive", filepath.Join(alias, "gone"), home, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &rules{home: tt.home}
			same, unknown := r.homeMatches(hermesRecord{Record: Record{HermesHome: tt.recorded}})
			if same != tt.same || unknown != "" {
				t.Errorf("homeMatches(%q) in %q = %v, %q; want %v", tt.recorded, tt.home, same, unknown, tt.same)
			}
		})
	}
}

// otherDriveFor returns dir spelled through another drive.
func otherDriveFor(t *testing.T, dir string) string {
	t.Helper()
	if unix := wineUnixName(t, dir); unix != "" {
		return `Z:` + strings.ReplaceAll(unix, "/", `\`)
	}
	drives, err := windows.GetLogicalDrives()
	if err != nil {
		t.Fatal(err)
	}
	for l := 'Z'; l >= 'D'; l-- {
		if drives&(1<<(l-'A')) != 0 {
			continue
		}
		name := string(l) + ":"
		if err := windows.DefineDosDevice(0, windows.StringToUTF16Ptr(name), windows.StringToUTF16Ptr(dir)); err != nil {
			t.Fatalf("subst %s %s: %v", name, dir, err)
		}
		t.Cleanup(func() {
			_ = windows.DefineDosDevice(windows.DDD_REMOVE_DEFINITION|windows.DDD_EXACT_MATCH_ON_REMOVE,
				windows.StringToUTF16Ptr(name), windows.StringToUTF16Ptr(dir))
		})
		return name + `\`
	}
	t.Fatal("no drive letter free for subst")
	return ""
}

// wineUnixName is dir's Unix path under Wine, "" elsewhere.
func wineUnixName(t *testing.T, dir string) string {
	t.Helper()
	proc := windows.NewLazySystemDLL("kernel32.dll").NewProc("wine_get_unix_file_name")
	if proc.Find() != nil {
		return ""
	}
	p, _, err := proc.Call(uintptr(unsafe.Pointer(windows.StringToUTF16Ptr(dir))))
	if p == 0 {
		t.Fatalf("wine_get_unix_file_name(%s): %v", dir, err)
	}
	// A C string on Wine's heap, never Go's.
	return windows.BytePtrToString(*(**byte)(unsafe.Pointer(&p)))
}
