package sandbox

import (
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The package's doc comments name only files and identifiers that exist: a
// file like gateway.go must be in the package, and a doc link [Name] or
// [Type.Method] must resolve in it (links into other packages are left to
// their own tests).
func TestDocCommentsNameWhatExists(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*ast.File{}
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		if files[path], err = parser.ParseFile(fset, path, nil, parser.ParseComments); err != nil {
			t.Fatal(err)
		}
	}
	names := map[string]bool{}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				name := d.Name.Name
				if d.Recv != nil && len(d.Recv.List) == 1 {
					typ := d.Recv.List[0].Type
					if s, ok := typ.(*ast.StarExpr); ok {
						typ = s.X
					}
					if id, ok := typ.(*ast.Ident); ok {
						name = id.Name + "." + name
					}
				}
				names[name] = true
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						names[s.Name.Name] = true
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, fld := range st.Fields.List {
								for _, n := range fld.Names {
									names[s.Name.Name+"."+n.Name] = true
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							names[n.Name] = true
						}
					}
				}
			}
		}
	}
	fileRE := regexp.MustCompile(`\b([a-z_]+)\.go\b`)
	p := comment.Parser{ // every [Name] is a link; a lowercase first part is another package
		LookupSym: func(string, string) bool { return true },
		LookupPackage: func(name string) (string, bool) {
			return name, name != "" && strings.ToLower(name[:1]) == name[:1]
		},
	}
	for path, f := range files {
		for _, cg := range f.Comments {
			text := cg.Text()
			for _, m := range fileRE.FindAllStringSubmatch(text, -1) {
				if _, err := os.Stat(m[1] + ".go"); err != nil && !strings.Contains(text, "/"+m[0]) {
					t.Errorf("%s: a comment cites %s, which is not in the package", path, m[0])
				}
			}
			for _, link := range docLinks(p.Parse(text).Content) {
				name := strings.TrimPrefix(link.Recv+"."+link.Name, ".")
				if link.ImportPath == "" && !names[name] {
					t.Errorf("%s: a comment links [%s], which does not exist", path, name)
				}
			}
		}
	}
}

func docLinks(blocks []comment.Block) []*comment.DocLink {
	var out []*comment.DocLink
	var walk func([]comment.Text)
	walk = func(ts []comment.Text) {
		for _, t := range ts {
			switch t := t.(type) {
			case *comment.DocLink:
				out = append(out, t)
			case *comment.Link:
				walk(t.Text)
			}
		}
	}
	for _, b := range blocks {
		switch b := b.(type) {
		case *comment.Paragraph:
			walk(b.Text)
		case *comment.List:
			for _, it := range b.Items {
				for _, c := range it.Content {
					if p, ok := c.(*comment.Paragraph); ok {
						walk(p.Text)
					}
				}
			}
		case *comment.Heading:
			walk(b.Text)
		}
	}
	return out
}
