// The precise reference for TypeScript caller edges: at every call and `new` of a project,
// what the TypeScript compiler's checker says the callee is (aliases followed), when it is a
// function, method or class declared in the project (a const holding an arrow function too). Prints JSON lines:
// [caller file, call line, callee file, callee declaration's first line, callee name line].
//
//   node bench/ts_callees.js <typescript module dir> <project root> [js]
//
// With ``js``, the project's JavaScript (.js, .cjs, .mjs) instead, read with allowJs: the
// checker's inference over JavaScript (CommonJS require and module.exports, classes, JSDoc
// types), what an editor's go-to-definition answers.
"use strict";
const fs = require("fs");
const path = require("path");
const ts = require(process.argv[2]);
const root = path.resolve(process.argv[3]);
const javascript = process.argv[4] === "js";
const SOURCE = javascript ? /\.[cm]?js$/ : /\.tsx?$/;

function walk(dir, out) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(full, out);
    else if (SOURCE.test(entry.name) && !entry.name.endsWith(".d.ts")) out.push(full);
  }
  return out;
}

const files = walk(root, []);
const inProject = new Set(files);
const program = ts.createProgram(files, {
  target: ts.ScriptTarget.ES2020,
  module: ts.ModuleKind.CommonJS,
  moduleResolution: ts.ModuleResolutionKind.Node10,
  noEmit: true,
  skipLibCheck: true,
  strict: true,
  allowJs: javascript,
  maxNodeModuleJsDepth: 0,
});
const checker = program.getTypeChecker();
const CALLABLE = new Set([
  ts.SyntaxKind.FunctionDeclaration,
  ts.SyntaxKind.MethodDeclaration,
  ts.SyntaxKind.MethodSignature,
  ts.SyntaxKind.ClassDeclaration,
  ts.SyntaxKind.Constructor,
]);

function calleeName(expression) {
  if (ts.isPropertyAccessExpression(expression)) return expression.name;
  if (ts.isIdentifier(expression)) return expression;
  return null;
}

// JavaScript: a CommonJS module exports ``{ isParenthesised, ... }``, and the checker's
// symbol for ``astUtils.isParenthesised`` is that shorthand property (or ``name: value``):
// the callee is the function it holds, as an editor's second go-to-definition finds.
function heldFunction(symbol) {
  const declaration = symbol && symbol.declarations && symbol.declarations[0];
  if (!declaration) return symbol;
  let held;
  if (ts.isShorthandPropertyAssignment(declaration)) {
    held = checker.getShorthandAssignmentValueSymbol(declaration);
  } else if (ts.isPropertyAssignment(declaration) && ts.isIdentifier(declaration.initializer)) {
    held = checker.getSymbolAtLocation(declaration.initializer);
  }
  if (held && held.flags & ts.SymbolFlags.Alias) held = checker.getAliasedSymbol(held);
  return held || symbol;
}

function line(file, position) {
  return file.getLineAndCharacterOfPosition(position).line + 1;
}

for (const file of program.getSourceFiles()) {
  if (!inProject.has(path.resolve(file.fileName))) continue;
  const visit = (node) => {
    if (ts.isCallExpression(node) || ts.isNewExpression(node)) {
      const name = calleeName(node.expression);
      let symbol = name ? checker.getSymbolAtLocation(name) : undefined;
      if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
      if (javascript) symbol = heldFunction(symbol);
      for (const declaration of (symbol && symbol.declarations) || []) {
        const target = declaration.kind === ts.SyntaxKind.Constructor ? declaration.parent : declaration;
        const isFunctionValue = ts.isVariableDeclaration(declaration) && declaration.initializer &&
          (ts.isArrowFunction(declaration.initializer) || ts.isFunctionExpression(declaration.initializer));
        if (!CALLABLE.has(declaration.kind) && !isFunctionValue) continue;
        const targetFile = target.getSourceFile();
        if (!inProject.has(path.resolve(targetFile.fileName))) continue;
        const named = target.name || target;
        process.stdout.write(JSON.stringify([
          path.relative(root, file.fileName),
          line(file, node.getStart(file)),
          path.relative(root, targetFile.fileName),
          line(targetFile, target.getStart(targetFile)),
          line(targetFile, named.getStart(targetFile)),
        ]) + "\n");
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
}
