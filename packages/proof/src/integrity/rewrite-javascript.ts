/**
 * A semantics-preserving rewrite of JavaScript/TypeScript gold, made with @babel/parser,
 * @babel/traverse (scope-aware renaming) and @babel/generator (reprinted, then every
 * indentation doubled outside literals): parameters and local variables renamed in every
 * function, adjacent top-level function declarations (hoisted, so order-free) last first,
 * a comment line added.
 */
import * as generateModule from '@babel/generator';
import { parse, type ParserPlugin } from '@babel/parser';
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
  const plugins: ParserPlugin[] = isTypeScriptPath(path) ? ['typescript'] : path.endsWith('x') ? ['jsx'] : [];
  try {
    ast = parse(text, { sourceType: 'unambiguous', plugins });
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
  const printed = reindent(generate(ast, { comments: true, retainLines: false, compact: false }).code, plugins);
  if (printed === null) return null;
  const directive = /^\s*(['"])use strict\1;?/.test(printed) ? printed.indexOf('\n') + 1 : 0;
  return `${printed.slice(0, directive)}// an equivalent rewrite of the solution\n${printed.slice(directive)}\n`;
}

/**
 * Every line's indentation doubled, except where a line starts inside a template literal,
 * a string (a `\\` line continuation) or JSX text: Babel prints gold's own two-space style, so
 * without this a file with nothing to rename would come back formatted as it was. Null
 * when the printed code does not parse again.
 */
function reindent(code: string, plugins: ParserPlugin[]): string | null {
  const literal: [number, number][] = [];
  try {
    traverse(parse(code, { sourceType: 'unambiguous', plugins }), {
      enter(node: NodePath) {
        if (node.isTemplateElement() || node.isStringLiteral() || node.isJSXText() || node.isDirectiveLiteral())
          literal.push([node.node.start!, node.node.end!]);
      },
    });
  } catch {
    return null;
  }
  let offset = 0;
  return code
    .split('\n')
    .map((line) => {
      const start = offset;
      offset += line.length + 1;
      if (literal.some(([s, e]) => s < start && start < e)) return line;
      return /^[ \t]*/.exec(line)![0] + line;
    })
    .join('\n');
}

function functionName(statement: t.Statement): string | null {
  const declaration = statement.type === 'ExportNamedDeclaration' ? statement.declaration : statement;
  return declaration?.type === 'FunctionDeclaration' && declaration.id ? declaration.id.name : null;
}

/** Each run of two or more adjacent function declarations, last first. */
function reorderFunctions(body: t.Statement[]): void {
  for (let i = 0; i < body.length;) {
    let j = i;
    while (j < body.length && functionName(body[j]!) !== null) j++;
    const names = body.slice(i, j).map(functionName);
    if (j - i >= 2 && new Set(names).size === j - i) body.splice(i, j - i, ...body.slice(i, j).reverse());
    i = Math.max(j, i + 1);
  }
}
