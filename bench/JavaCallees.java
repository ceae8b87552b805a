// The precise reference for Java caller edges: at every method call and `new` of a source
// tree, the method or class javac resolves (its Trees API after attribution), when it is
// declared in that tree. A constructor (`new C()`, `this(...)`, `super(...)`) counts as its
// class, as patchstream's INSTANTIATES edges do. Prints JSON lines:
// [caller file, call line, callee file, callee declaration's first line, same line].
//
//   java bench/JavaCallees.java <source root>
import com.sun.source.tree.CompilationUnitTree;
import com.sun.source.tree.MethodInvocationTree;
import com.sun.source.tree.NewClassTree;
import com.sun.source.tree.Tree;
import com.sun.source.util.JavacTask;
import com.sun.source.util.SourcePositions;
import com.sun.source.util.TreePath;
import com.sun.source.util.TreePathScanner;
import com.sun.source.util.Trees;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import javax.lang.model.element.Element;
import javax.lang.model.element.ElementKind;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;

public class JavaCallees {
    public static void main(String[] args) throws Exception {
        Path root = Paths.get(args[0]).toAbsolutePath().normalize();
        List<Path> files;
        try (Stream<Path> walk = Files.walk(root)) {
            files = walk.filter(p -> p.toString().endsWith(".java")).sorted()
                .collect(Collectors.toList());
        }
        JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        StandardJavaFileManager manager = compiler.getStandardFileManager(diagnostics, null, null);
        // Unresolvable annotations of optional dependencies are errors that do not stop
        // attribution: every call javac can resolve is still resolved.
        List<String> options = List.of("-proc:none", "-implicit:none", "-nowarn");
        JavacTask task = (JavacTask) compiler.getTask(null, manager, diagnostics, options, null,
            manager.getJavaFileObjectsFromPaths(files));
        Iterable<? extends CompilationUnitTree> units = task.parse();
        task.analyze();
        Trees trees = Trees.instance(task);
        SourcePositions positions = trees.getSourcePositions();
        StringBuilder out = new StringBuilder();
        for (CompilationUnitTree unit : units) {
            new TreePathScanner<Void, Void>() {
                @Override
                public Void visitMethodInvocation(MethodInvocationTree node, Void unused) {
                    emit(node);
                    return super.visitMethodInvocation(node, unused);
                }

                @Override
                public Void visitNewClass(NewClassTree node, Void unused) {
                    emit(node);
                    return super.visitNewClass(node, unused);
                }

                private void emit(Tree node) {
                    if (positions.getEndPosition(unit, node) < 0) {
                        return;  // javac's own (a default constructor's super()): not written
                    }
                    Element element = trees.getElement(getCurrentPath());
                    if (element == null) {
                        return;
                    }
                    if (element.getKind() == ElementKind.CONSTRUCTOR) {
                        element = element.getEnclosingElement();
                    }
                    TreePath declared = trees.getPath(element);
                    if (declared == null) {
                        return;  // the JDK's or a library's
                    }
                    CompilationUnitTree target = declared.getCompilationUnit();
                    long start = positions.getStartPosition(target, declared.getLeaf());
                    long line = target.getLineMap().getLineNumber(start);
                    long at = unit.getLineMap().getLineNumber(positions.getStartPosition(unit, node));
                    out.append("[").append(quoted(root, unit)).append(",").append(at).append(",")
                        .append(quoted(root, target)).append(",").append(line).append(",")
                        .append(line).append("]\n");
                }
            }.scan(unit, null);
        }
        System.out.print(out);
    }

    private static String quoted(Path root, CompilationUnitTree unit) {
        Path file = Paths.get(unit.getSourceFile().toUri());
        return "\"" + root.relativize(file).toString().replace("\\", "/") + "\"";
    }
}
