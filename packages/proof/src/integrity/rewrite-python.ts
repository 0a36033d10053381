/**
 * A semantics-preserving rewrite of Python gold, made with web-tree-sitter: local names
 * and parameters renamed inside each function, contiguous top-level functions in reverse
 * order, every indentation doubled and a comment line added. A suite that judges
 * behaviour cannot tell it from gold.
 */
import type { Node } from 'web-tree-sitter';
import { pythonParser } from '../sabotage/mutation/python.js';
import { freshName, splice, type Splice } from './splice.js';

// A function using these can reach its locals by name: renaming could change what it does.
const DYNAMIC_SCOPE = /\b(global|nonlocal|locals|vars|eval|exec)\b/;
const BINDING_PARENTS = new Set([
  'assignment',
  'augmented_assignment',
  'for_statement',
  'for_in_clause',
  'named_expression',
  'as_pattern_target',
]);
const PATTERNS = new Set([
  'pattern_list',
  'tuple_pattern',
  'list_pattern',
  'tuple',
  'list',
  'list_splat_pattern',
  'parenthesized_expression',
]);

/**
 * The names the tests' code uses (not the text of their strings): a parameter among them
 * may be passed by keyword, so it keeps its name.
 */
export async function namesInCode(tests: string[]): Promise<Set<string>> {
  const names = new Set<string>();
  for (const text of tests) {
    const found = await parse(text, (root) => root.descendantsOfType('identifier').map((n) => n!.text));
    // A test file that does not parse protects every word in it.
    for (const name of found ?? text.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []) names.add(name);
  }
  return names;
}

/** `protectedNames`: parameters never renamed (a test or the solution may pass them by keyword). */
export async function rewritePython(text: string, protectedNames: ReadonlySet<string>): Promise<string | null> {
  const renamed = await renameLocals(text, protectedNames);
  const reordered = await reorderFunctions(renamed);
  const reindented = await reindent(reordered);
  return (await parses(reindented)) ? reindented : null;
}

async function parse<T>(text: string, fn: (root: Node) => T): Promise<T | null> {
  const tree = (await pythonParser()).parse(text);
  if (!tree) return null;
  try {
    return tree.rootNode.hasError ? null : fn(tree.rootNode);
  } finally {
    tree.delete();
  }
}

async function parses(text: string): Promise<boolean> {
  return (await parse(text, () => true)) === true;
}

async function renameLocals(text: string, protectedNames: ReadonlySet<string>): Promise<string> {
  const edits = await parse(text, (root) => {
    const taken = new Set(root.descendantsOfType('identifier').map((n) => n!.text));
    const keywordNames = new Set(root.descendantsOfType('keyword_argument').map((n) => n!.childForFieldName('name')?.text ?? ''));
    const out: Splice[] = [];
    for (const fn of outermostFunctions(root)) {
      const source = fn.text;
      if (DYNAMIC_SCOPE.test(source) || fn.descendantsOfType('class_definition').length > 0) continue;
      const names = new Set<string>();
      for (const name of parameterNames(fn)) if (!protectedNames.has(name) && !keywordNames.has(name)) names.add(name);
      for (const name of assignedNames(fn)) if (!keywordNames.has(name)) names.add(name);
      const renames = new Map([...names].map((name) => [name, freshName(name, taken)]));
      // Defaults and annotations are evaluated outside the function: `def g(f=f)` keeps the outer `f`.
      const outside = definitionTimeParts(fn);
      for (const id of fn.descendantsOfType('identifier')) {
        const to = renames.get(id!.text);
        if (to && !isNameOfSomethingElse(id!) && !outside.some((part) => within(id!, part)))
          out.push({ start: id!.startIndex, end: id!.endIndex, text: to });
      }
    }
    return out;
  });
  return edits ? splice(text, edits) : text;
}

/** Functions not inside another function: methods count, each renamed on its own. */
function outermostFunctions(root: Node): Node[] {
  return root.descendantsOfType('function_definition').filter((fn) => {
    for (let up = fn!.parent; up; up = up.parent) if (up.type === 'function_definition' || up.type === 'lambda') return false;
    return true;
  }) as Node[];
}

function parameterNames(fn: Node): string[] {
  const parameters = fn.childForFieldName('parameters');
  if (!parameters) return [];
  const names: string[] = [];
  for (const p of parameters.namedChildren) {
    if (!p) continue;
    if (p.type === 'identifier') names.push(p.text);
    else {
      const name = p.childForFieldName('name') ?? p.namedChildren.find((c) => c?.type === 'identifier');
      if (name?.type === 'identifier') names.push(name.text);
    }
  }
  return names;
}

/** Names the function binds by assignment, loop, comprehension, `with`/`except … as` or `:=`. */
function assignedNames(fn: Node): string[] {
  const names: string[] = [];
  const collect = (node: Node | null | undefined) => {
    if (!node) return;
    if (node.type === 'identifier') names.push(node.text);
    else if (PATTERNS.has(node.type) || node.type === 'as_pattern_target') for (const c of node.namedChildren) collect(c);
  };
  for (const binding of fn.descendantsOfType([...BINDING_PARENTS])) {
    if (binding!.type === 'as_pattern_target') collect(binding);
    else collect(binding!.childForFieldName(binding!.type === 'named_expression' ? 'name' : 'left'));
  }
  return names;
}

/** What `def` evaluates when it runs, in the enclosing scope: parameter defaults and annotations, the return annotation. */
function definitionTimeParts(fn: Node): Node[] {
  const parts: Node[] = [];
  for (const p of fn.childForFieldName('parameters')?.namedChildren ?? []) {
    for (const field of ['value', 'type']) {
      const part = p?.childForFieldName(field);
      if (part) parts.push(part);
    }
  }
  const returns = fn.childForFieldName('return_type');
  if (returns) parts.push(returns);
  return parts;
}

function within(node: Node, part: Node): boolean {
  return node.startIndex >= part.startIndex && node.endIndex <= part.endIndex;
}

/** `obj.name` and `f(name=…)`: the same spelling, but not the local. */
function isNameOfSomethingElse(id: Node): boolean {
  const parent = id.parent;
  if (!parent) return false;
  if (parent.type === 'attribute' && parent.childForFieldName('attribute')?.equals(id)) return true;
  if (parent.type === 'keyword_argument' && parent.childForFieldName('name')?.equals(id)) return true;
  return false;
}

/**
 * Each run of two or more adjacent top-level functions, last first: a `def` only binds a
 * name, unless its defaults or annotations name another def of the run (`def g(f=f)`),
 * which must then stay first: such a run keeps its order. (A decorated def is not part of
 * a run, so its decorators always see what precedes it.)
 */
async function reorderFunctions(text: string): Promise<string> {
  const edits = await parse(text, (root) => {
    const out: Splice[] = [];
    const statements = root.namedChildren.filter((n): n is Node => n !== null && n.type !== 'comment');
    let run: Node[] = [];
    const flush = () => {
      const names = run.map((fn) => fn.childForFieldName('name')?.text);
      const usedWhenDefined = run.flatMap((fn) =>
        definitionTimeParts(fn)
          .flatMap((part) => [part, ...part.descendantsOfType('identifier')])
          .map((n) => n!.text),
      );
      const independent = !usedWhenDefined.some((name) => names.includes(name));
      if (run.length >= 2 && new Set(names).size === run.length && independent) {
        const reversed = [...run].reverse();
        run.forEach((fn, i) => out.push({ start: fn.startIndex, end: fn.endIndex, text: reversed[i]!.text }));
      }
      run = [];
    };
    for (const statement of statements) {
      if (statement.type === 'function_definition') run.push(statement);
      else flush();
    }
    flush();
    return out;
  });
  return edits ? splice(text, edits) : text;
}

/** Every line's indentation doubled (Python needs it consistent, not 4 wide), except inside strings. */
async function reindent(text: string): Promise<string> {
  const strings = await parse(text, (root) => root.descendantsOfType('string').map((s) => [s!.startIndex, s!.endIndex] as const));
  if (!strings) return text;
  const lines = text.split('\n');
  let offset = 0;
  const out = lines.map((line) => {
    const start = offset;
    offset += line.length + 1;
    if (strings.some(([s, e]) => s < start && start < e)) return line;
    const indent = /^[ \t]*/.exec(line)![0];
    return indent + line;
  });
  const header = out[0]?.startsWith('#!') || /coding[:=]/.test(out[0] ?? '') ? 1 : 0;
  out.splice(header, 0, '# an equivalent rewrite of the solution');
  return out.join('\n');
}
