package supervisor

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

var updateDoc = flag.Bool("update-doc", false, "rewrite the state table in docs/architecture.md from machine.go's table")

const (
	architectureDoc = "../docs/architecture.md"
	tableBegin      = "<!-- BEGIN state table: written from supervisor/machine.go by `go test ./supervisor -run TestArchitectureDocTable -update-doc`; do not edit by hand -->"
	tableEnd        = "<!-- END state table -->"
)

// constNames returns, in declaration order, the names of the constants of
// type typ that machine.go declares with iota, and each one's line comment.
func constNames(t *testing.T, typ string) (names, docs []string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "machine.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST || len(g.Specs) == 0 {
			continue
		}
		if first := g.Specs[0].(*ast.ValueSpec); first.Type == nil || fmt.Sprint(first.Type) != typ {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for _, n := range vs.Names {
				names = append(names, n.Name)
				docs = append(docs, strings.TrimSpace(vs.Comment.Text()))
			}
		}
	}
	if len(names) == 0 {
		t.Fatalf("machine.go declares no constants of type %s", typ)
	}
	return names, docs
}

// renderTable writes the transition table as Markdown: the rows in order
// (the first that matches applies), then what each trigger and action is.
func renderTable(t *testing.T) string {
	triggers, triggerDocs := constNames(t, "trigger")
	actions, actionDocs := constNames(t, "action")
	states := func(ss []State) string {
		if ss == nil {
			return "any"
		}
		var out []string
		for _, s := range ss {
			out = append(out, string(s))
		}
		return strings.Join(out, ", ")
	}
	var b strings.Builder
	b.WriteString(tableBegin + "\n\n")
	b.WriteString("| # | in state | with intent | on | to | intent after | does | reason logged |\n|---|---|---|---|---|---|---|---|\n")
	for i, r := range table {
		intents := "any"
		if r.Intents != nil {
			var out []string
			for _, in := range r.Intents {
				out = append(out, in.String())
			}
			intents = strings.Join(out, ", ")
		}
		to := string(r.To)
		if r.To == stay {
			to = "(stays)"
		}
		then := "(unchanged)"
		if r.Then != nil {
			then = r.Then.String()
		}
		var do []string
		for _, a := range r.Do {
			do = append(do, "`"+actions[a]+"`")
		}
		why := "the trigger's"
		if r.Why != "" {
			why = r.Why
		}
		fmt.Fprintf(&b, "| %d | %s | %s | `%s` | %s | %s | %s | %s |\n", i+1, states(r.From), intents, triggers[r.On], to, then, strings.Join(do, ", "), why)
	}
	b.WriteString("\n| trigger | what fires it |\n|---|---|\n")
	for i, n := range triggers {
		fmt.Fprintf(&b, "| `%s` | %s |\n", n, triggerDocs[i])
	}
	b.WriteString("\n| action | what it does |\n|---|---|\n")
	for i, n := range actions {
		fmt.Fprintf(&b, "| `%s` | %s |\n", n, actionDocs[i])
	}
	b.WriteString("\n" + tableEnd)
	return b.String()
}

// TestArchitectureDocTable keeps the state table of docs/architecture.md
// the one machine.go runs: a row added, changed or reordered in the code
// fails here until the doc is rewritten with -update-doc.
func TestArchitectureDocTable(t *testing.T) {
	doc, err := os.ReadFile(architectureDoc)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(doc, []byte(tableBegin)), bytes.Index(doc, []byte(tableEnd))
	if i < 0 || j < i {
		t.Fatalf("%s has no state table between %q and %q", architectureDoc, tableBegin, tableEnd)
	}
	want := renderTable(t)
	got := string(doc[i : j+len(tableEnd)])
	if got == want {
		return
	}
	if *updateDoc {
		out := append(append(append([]byte{}, doc[:i]...), want...), doc[j+len(tableEnd):]...)
		if err := os.WriteFile(architectureDoc, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the state table in %s is not machine.go's table: run `go test ./supervisor -run TestArchitectureDocTable -update-doc` and read the diff\n got:\n%s\nwant:\n%s", architectureDoc, got, want)
}
