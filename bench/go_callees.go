// The precise reference for Go caller edges: at every call of a module's packages, the
// function or method go/types says is called, when the module declares it. Prints JSON
// lines as bench/ts_callees.js does:
// [caller file, call line, callee file, callee declaration's first line, callee name line].
// Standard-library packages are type-checked from GOROOT's sources; the module's own from
// its directory (no network, no module cache: modules without dependencies only).
//
//	go run bench/go_callees.go <module root>
package main

import (
	"encoding/json"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

type checker struct {
	root, module string
	fset         *token.FileSet
	std          types.Importer
	done         map[string]*types.Package
	files        map[string][]*ast.File
	infos        map[string]*types.Info
	decls        map[token.Pos]int // a function's name -> the line its declaration starts
	errors       int               // type errors (said on stderr: a reference with many is partial)
}

func (c *checker) Import(path string) (*types.Package, error) {
	if path != c.module && !strings.HasPrefix(path, c.module+"/") {
		return c.std.Import(path)
	}
	if pkg, ok := c.done[path]; ok {
		return pkg, nil
	}
	dir := filepath.Join(c.root, strings.TrimPrefix(strings.TrimPrefix(path, c.module), "/"))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, entry := range entries {
		name := entry.Name()
		if entry.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		if built, _ := build.Default.MatchFile(dir, name); !built { // build constraints
			continue
		}
		file, err := parser.ParseFile(c.fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		files = append(files, file)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	config := types.Config{Importer: c, Error: func(err error) {
		c.errors++
		if os.Getenv("GO_CALLEES_DEBUG") != "" {
			os.Stderr.WriteString(err.Error() + "\n")
		}
	}}
	pkg, _ := config.Check(path, c.fset, files, info)
	c.done[path], c.files[path], c.infos[path] = pkg, files, info
	for _, file := range files {
		for _, decl := range file.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok {
				c.decls[fn.Name.Pos()] = c.fset.Position(fn.Pos()).Line
			}
		}
	}
	return pkg, nil
}

// The identifier that names a composite literal's type (“T“, “pkg.T“, “T[int]“).
func typeName(expression ast.Expr) *ast.Ident {
	switch typed := expression.(type) {
	case *ast.Ident:
		return typed
	case *ast.SelectorExpr:
		return typed.Sel
	case *ast.IndexExpr:
		return typeName(typed.X)
	}
	return nil
}

// One line for the function, method or named type “name“ uses at “at“, when the module
// declares it.
func (c *checker) emit(out *json.Encoder, path string, at token.Pos, name *ast.Ident) {
	if name == nil {
		return
	}
	var declared token.Pos
	start := 0
	switch object := c.infos[path].Uses[name].(type) {
	case *types.Func:
		declared = object.Pos()
		start = c.decls[object.Origin().Pos()] // 0: an interface's method, its name's line
	case *types.TypeName:
		if _, named := object.Type().(*types.Named); !named || object.IsAlias() {
			return
		}
		declared = object.Pos()
	default:
		return
	}
	if !declared.IsValid() {
		return
	}
	target := c.fset.Position(declared)
	rel, err := filepath.Rel(c.root, target.Filename)
	if err != nil || strings.HasPrefix(rel, "..") {
		return
	}
	if start == 0 {
		start = target.Line
	}
	here := c.fset.Position(at)
	from, _ := filepath.Rel(c.root, here.Filename)
	out.Encode([]interface{}{filepath.ToSlash(from), here.Line, filepath.ToSlash(rel), start, target.Line})
}

func unparen(expression ast.Expr) ast.Expr {
	for {
		inner, ok := expression.(*ast.ParenExpr)
		if !ok {
			return expression
		}
		expression = inner.X
	}
}

func main() {
	root, _ := filepath.Abs(os.Args[1])
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		panic(err)
	}
	module := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(mod), "\n", 2)[0], "module"))
	fset := token.NewFileSet()
	c := &checker{root: root, module: module, fset: fset, std: importer.ForCompiler(fset, "source", nil),
		done: map[string]*types.Package{}, files: map[string][]*ast.File{}, infos: map[string]*types.Info{},
		decls: map[token.Pos]int{}}
	var paths []string
	filepath.WalkDir(root, func(path string, entry os.DirEntry, err error) error {
		if err == nil && entry.IsDir() {
			rel, _ := filepath.Rel(root, path)
			if rel != "." && (strings.HasPrefix(entry.Name(), ".") || strings.HasPrefix(entry.Name(), "_") || entry.Name() == "testdata") {
				return filepath.SkipDir
			}
			imported := module
			if rel != "." {
				imported = module + "/" + filepath.ToSlash(rel)
			}
			paths = append(paths, imported)
		}
		return nil
	})
	sort.Strings(paths)
	for _, path := range paths {
		c.Import(path)
	}
	out := json.NewEncoder(os.Stdout)
	for _, path := range paths {
		for _, file := range c.files[path] {
			ast.Inspect(file, func(node ast.Node) bool {
				if literal, ok := node.(*ast.CompositeLit); ok && literal.Type != nil {
					// ``T{..}`` and ``&T{..}`` build a T, as ``new T()`` does in Java or TypeScript.
					c.emit(out, path, literal.Pos(), typeName(literal.Type))
					return true
				}
				call, ok := node.(*ast.CallExpr)
				if !ok {
					return true
				}
				var name *ast.Ident
				switch fun := unparen(call.Fun).(type) {
				case *ast.Ident:
					name = fun
				case *ast.SelectorExpr:
					name = fun.Sel
				case *ast.IndexExpr: // a generic function's explicit instantiation
					if id, ok := fun.X.(*ast.Ident); ok {
						name = id
					}
				}
				if name == nil {
					return true
				}
				if _, ok := c.infos[path].Uses[name].(*types.Func); ok {
					c.emit(out, path, call.Pos(), name)
				}
				return true
			})
		}
	}
	os.Stderr.WriteString("type errors: " + strconv.Itoa(c.errors) + "\n")
}
