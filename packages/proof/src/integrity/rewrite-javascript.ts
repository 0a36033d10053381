/**
 * A semantics-preserving rewrite of JavaScript/TypeScript gold, made with @babel/parser,
 * @babel/traverse (scope-aware renaming) and @babel/generator (reprinted, so formatting
 * changes): parameters and local variables renamed in every function, adjacent top-level
 * function declarations (hoisted, so order-free) last first, a comment line added.
 */
import * as generateModule from '@babel/generator';
import { parse } from '@babel/parser';
import * as traverseModule from '@babel/traverse';
import type { NodePath, TraverseOptions } from '@babel/traverse';
import type { GeneratorOptions, GeneratorResult } from '@babel/generator';
import type * as t from '@babel/types';
import { isTypeScriptPath } from '../sabotage/mutation/javascript.js';

// Both are CommonJS modules whose function is their `default` export (nested once more under Node's ESM loader).
type Traverse = (ast: t.Node, visitors: TraverseOptions) => void;
type Generate = (ast: t.Node, options: GeneratorOptions) => GeneratorResult;
const traverse = defaultExport<Traverse>(traverseModule);
const generate = defaultExport<Generate>(generateModule);

function defaultExport<T>(module: unknown): T {
  let value = module as { default?: unknown };
  while (typeof value !== 'function' && value?.default !== undefined) value = value.default as { default?: unknown };
  return value as T;
}

const RENAMED_KINDS = new Set(['param', 'let', 'const', 'var']);

export function rewriteJavaScript(path: string, text: string): string | null {
  let ast: t.File;
  try {
    ast = parse(text, { sourceType: 'unambiguous', plugins: isTypeScriptPath(path) ? ['typescript'] : path.endsWith('x') ? ['jsx'] : [] });
  } catch {
    return null;
  }
  // `eval` and `with` see locals by name.
  if (/\beval\b|\bwith\s*\(/.test(text)) return null;
  traverse(ast, {
    Function(fn: NodePath<t.Function>) {
      for (const [name, binding] of Object.entries(fn.scope.bindings)) {
        // A class keeps its `.name`; inner function declarations too.
        if (!RENAMED_KINDS.has(binding.kind) || binding.path.isClassDeclaration()) continue;
        fn.scope.rename(name, fn.scope.generateUid(name));
      }
    },
    Scopable(block: NodePath<t.Scopable>) {
      if (block.isFunction() || block.isProgram() || block.isClass()) return;
      if (!block.findParent((p) => p.isFunction())) return;
      for (const [name, binding] of Object.entries(block.scope.bindings)) {
        if (!RENAMED_KINDS.has(binding.kind) || binding.path.isClassDeclaration()) continue;
        block.scope.rename(name, block.scope.generateUid(name));
      }
    },
  });
  reorderFunctions(ast.program.body);
  const printed = generate(ast, { comments: true, retainLines: false, compact: false }).code;
  const directive = /^\s*(['"])use strict\1;?/.test(printed) ? printed.indexOf('\n') + 1 : 0;
  return `${printed.slice(0, directive)}// an equivalent rewrite of the solution\n${printed.slice(directive)}\n`;
}

function functionName(statement: t.Statement): string | null {
  const declaration = statement.type === 'ExportNamedDeclaration' ? statement.declaration : statement;
  return declaration?.type === 'FunctionDeclaration' && declaration.id ? declaration.id.name : null;
}

/** Each run of two or more adjacent function declarations, last first. */
function reorderFunctions(body: t.Statement[]): void {
  for (let i = 0; i < body.length; ) {
    let j = i;
    while (j < body.length && functionName(body[j]!) !== null) j++;
    const names = body.slice(i, j).map(functionName);
    if (j - i >= 2 && new Set(names).size === j - i) body.splice(i, j - i, ...body.slice(i, j).reverse());
    i = Math.max(j, i + 1);
  }
}
