package layers

import (
	"bytes"
	"go/ast"
	"go/build"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	osSuffix = regexp.MustCompile(`_(linux|darwin|windows|unix|other|posix|freebsd|openbsd|netbsd|plan9)(_[a-z0-9]+)?(_test)?\.go$`)
	osWord   = regexp.MustCompile(`\b(linux|darwin|windows|unix|freebsd|openbsd|netbsd|plan9|ios|android|js|wasip1|solaris|illumos|aix|dragonfly)\b`)
)

// root is the module's directory, two levels above this package.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// packageDirs lists the module's directories holding Go files, relative
// to the root, testdata and hidden directories left out.
func packageDirs(t *testing.T) []string {
	t.Helper()
	r := root(t)
	seen := map[string]bool{}
	err := filepath.WalkDir(r, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != r && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") {
			rel, _ := filepath.Rel(r, filepath.Dir(p))
			seen[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for d := range seen {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// sourceFiles lists the non-test Go files in dir.
func sourceFiles(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(names, func(p string) bool { return strings.HasSuffix(p, "_test.go") })
}

// exported lists the exported declarations of f: funcs, types, vars,
// consts, and methods of exported types.
func exported(f *ast.File) []string {
	var out []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv != nil && len(d.Recv.List) > 0 {
				recv := d.Recv.List[0].Type
				if s, ok := recv.(*ast.StarExpr); ok {
					recv = s.X
				}
				if ix, ok := recv.(*ast.IndexExpr); ok {
					recv = ix.X
				}
				if id, ok := recv.(*ast.Ident); ok {
					if !id.IsExported() {
						continue
					}
					out = append(out, "method "+id.Name+"."+d.Name.Name)
					continue
				}
			}
			out = append(out, "func "+d.Name.Name)
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						out = append(out, "type "+s.Name.Name)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							out = append(out, d.Tok.String()+" "+n.Name)
						}
					}
				}
			}
		}
	}
	return out
}

// osSpecific reports whether a file is built for some OSes only: by its
// name's suffix, or by a //go:build line that names an OS.
func osSpecific(name string, f *ast.File) bool {
	if osSuffix.MatchString(name) {
		return true
	}
	for _, cg := range f.Comments {
		if cg.Pos() > f.Package {
			break
		}
		for _, c := range cg.List {
			if strings.HasPrefix(c.Text, "//go:build") && osWord.MatchString(c.Text) {
				return true
			}
		}
	}
	return false
}

// TestExportedNamesOncePerPackage keeps os/exec's convention: exported
// names and their docs in x.go, lower-case bodies in x_linux.go,
// x_unix.go, x_windows.go. An exported declaration in a file that only some
// OSes build makes the package's API, and its go doc, depend on GOOS.
func TestExportedNamesOncePerPackage(t *testing.T) {
	r := root(t)
	for _, dir := range packageDirs(t) {
		for _, p := range sourceFiles(t, filepath.Join(r, dir)) {
			f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			if f.Name.Name == "main" || !osSpecific(filepath.Base(p), f) {
				continue
			}
			for _, e := range exported(f) {
				t.Errorf("%s/%s declares %s, but only some OSes build it: declare it once in a file every OS builds and call a lower-case body here", dir, filepath.Base(p), e)
			}
		}
	}
}

// api renders what go doc shows of the package in dir as GOOS builds it:
// every exported declaration with its doc comment, function bodies left
// out, in a stable order.
func api(t *testing.T, dir, goos string) string {
	t.Helper()
	ctx := build.Default
	ctx.GOOS, ctx.GOARCH, ctx.CgoEnabled = goos, "amd64", false
	pkg, err := ctx.ImportDir(dir, 0)
	if err != nil {
		if _, ok := err.(*build.NoGoError); ok {
			return ""
		}
		t.Fatalf("%s for %s: %v", dir, goos, err)
	}
	var decls []string
	fset := token.NewFileSet()
	for _, name := range pkg.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if len(exportedDecl(d)) == 0 {
				continue
			}
			if fd, ok := d.(*ast.FuncDecl); ok {
				c := *fd
				c.Body = nil
				d = &c
			}
			var b bytes.Buffer
			if doc := docOf(d); doc != "" {
				b.WriteString(doc)
			}
			if err := printer.Fprint(&b, fset, d); err != nil {
				t.Fatal(err)
			}
			decls = append(decls, b.String())
		}
	}
	slices.Sort(decls)
	return pkg.Doc + "\n" + strings.Join(decls, "\n\n")
}

func exportedDecl(d ast.Decl) []string {
	return exported(&ast.File{Decls: []ast.Decl{d}})
}

func docOf(d ast.Decl) string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		return d.Doc.Text()
	case *ast.GenDecl:
		return d.Doc.Text()
	}
	return ""
}

// TestGoDocSameOnEveryOS checks what users of go doc see: the exported
// declarations and their docs of every package are the same for linux,
// darwin and windows.
func TestGoDocSameOnEveryOS(t *testing.T) {
	r := root(t)
	for _, dir := range packageDirs(t) {
		want := api(t, filepath.Join(r, dir), "linux")
		for _, goos := range []string{"darwin", "windows"} {
			if got := api(t, filepath.Join(r, dir), goos); got != want {
				t.Errorf("go doc of %s differs between linux and %s:\nlinux:\n%s\n%s:\n%s", dir, goos, want, goos, got)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(r, "go.mod")); err != nil {
		t.Fatalf("module root not found: %v", err)
	}
}
