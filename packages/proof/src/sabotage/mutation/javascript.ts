/**
 * Bug sites in JavaScript/TypeScript, found with @babel/parser and spliced as text. Each
 * edit is one realistic bug of a family (families.ts); return-value perturbations (on
 * named functions, not callbacks) are listed too, for the last resort. No edit touches a
 * loop's update clause, a `while` condition or a counter it reads: a hang is not a bug.
 */
import { parse } from '@babel/parser';
import type { BugFamily } from '../families.js';
import { changeText, lineAt, type Edit } from './edits.js';

interface Node {
  type: string;
  start: number;
  end: number;
  [key: string]: unknown;
}

interface Scope {
  name: string;
  /** Names read as numbers in the function (operands of arithmetic and comparisons, loop counters). */
  numeric: Set<string>;
  /** Names a `while` condition reads. */
  whileNames: Set<string>;
}

interface Context {
  scope: Scope | null;
  /** In a function the tests can call (not a callback): its returns are return values. */
  named: boolean;
  /** Inside a loop's update clause or a `while` test: no edits. */
  frozen: boolean;
  /** Inside a `.sort()` comparator: swapped operands are a wrong sort order. */
  comparator: boolean;
}

const ARITHMETIC: Record<string, string> = { '+': '-', '-': '+', '*': '/', '/': '*', '**': '*' };
const BOUNDARY: Record<string, string> = { '<': '<=', '<=': '<', '>': '>=', '>=': '>' };
const INVERSE: Record<string, string> = { '<': '>=', '<=': '>', '>': '<=', '>=': '<', '===': '!==', '!==': '===', '==': '!=', '!=': '==' };
const NON_COMMUTATIVE = new Set(['-', '/', '%', '**']);
const METHODS: Record<string, string> = {
  min: 'max',
  max: 'min',
  some: 'every',
  every: 'some',
  startsWith: 'endsWith',
  endsWith: 'startsWith',
  toLowerCase: 'toUpperCase',
  toUpperCase: 'toLowerCase',
  trimStart: 'trimEnd',
  trimEnd: 'trimStart',
  indexOf: 'lastIndexOf',
  lastIndexOf: 'indexOf',
  push: 'unshift',
  unshift: 'push',
  padStart: 'padEnd',
  padEnd: 'padStart',
  find: 'findLast',
  findIndex: 'findLastIndex',
};
const ROUNDING: Record<string, string[]> = { round: ['floor', 'trunc'], floor: ['ceil', 'round'], ceil: ['floor'], trunc: ['round'] };
const BOUNDED_CALLS = new Set(['slice', 'substring', 'substr', 'splice']);
const PREDICATE_CALLS = new Set(['filter', 'find', 'findIndex', 'some', 'every']);
const BOOLEAN_OPERATORS = new Set(['<', '<=', '>', '>=', '===', '!==', '==', '!=', '&&', '||', 'in', 'instanceof']);
const FUNCTIONS = new Set(['FunctionDeclaration', 'FunctionExpression', 'ArrowFunctionExpression', 'ObjectMethod', 'ClassMethod']);
const SKIPPED_KEYS = new Set([
  'loc',
  'leadingComments',
  'trailingComments',
  'innerComments',
  'extra',
  'typeAnnotation',
  'returnType',
  'typeParameters',
]);

export function isTypeScriptPath(path: string): boolean {
  return /\.[cm]?tsx?$/.test(path);
}

function parseFile(path: string, text: string): Node {
  return parse(text, {
    sourceType: 'unambiguous',
    plugins: isTypeScriptPath(path) ? ['typescript'] : path.endsWith('x') ? ['jsx'] : [],
    errorRecovery: false,
  }) as unknown as Node;
}

export function parsesAsJavaScript(path: string, text: string): boolean {
  try {
    parseFile(path, text);
    return true;
  } catch {
    return false;
  }
}

function isNode(value: unknown): value is Node {
  return (
    value !== null && typeof value === 'object' && typeof (value as Node).type === 'string' && typeof (value as Node).start === 'number'
  );
}

function children(node: Node): Node[] {
  const out: Node[] = [];
  for (const [key, value] of Object.entries(node)) {
    if (SKIPPED_KEYS.has(key) || (key.startsWith('type') && key !== 'type')) continue;
    if (Array.isArray(value)) out.push(...value.filter(isNode));
    else if (isNode(value)) out.push(value);
  }
  return out;
}

export function javascriptEdits(path: string, text: string): Edit[] {
  const edits: Edit[] = [];
  const root = parseFile(path, text);
  const src = (n: Node) => text.slice(n.start, n.end);
  const localFunctions = new Set<string>();
  for (const statement of ((root.program as Node).body as Node[]) ?? []) {
    const declaration = statement.type === 'ExportNamedDeclaration' ? (statement.declaration as Node | null) : statement;
    if (declaration?.type === 'FunctionDeclaration' && isNode(declaration.id)) localFunctions.add(String(declaration.id.name));
    if (declaration?.type === 'VariableDeclaration') {
      for (const d of declaration.declarations as Node[])
        if (isNode(d.init) && FUNCTIONS.has(d.init.type) && isNode(d.id)) localFunctions.add(String(d.id.name));
    }
  }

  const add = (start: number, end: number, replacement: string, family: BugFamily, ctx: Context, context?: Node) => {
    const before = context ? src(context) : text.slice(start, end);
    const after = context ? text.slice(context.start, start) + replacement + text.slice(end, context.end) : replacement;
    edits.push({
      file: path,
      start,
      end,
      replacement,
      family,
      scope: ctx.scope?.name ?? null,
      line: lineAt(text, start),
      change: changeText(before, after),
    });
  };
  const replace = (node: Node, replacement: string, family: BugFamily, ctx: Context) => add(node.start, node.end, replacement, family, ctx);
  const operatorAt = (from: number, to: number, operator: string) => {
    const index = text.indexOf(operator, from);
    return index >= 0 && index + operator.length <= to ? index : -1;
  };
  const swapOperator = (node: Node, to: string, family: BugFamily, ctx: Context) => {
    const at = operatorAt((node.left as Node).end, (node.right as Node).start, String(node.operator));
    if (at >= 0) add(at, at + String(node.operator).length, to, family, ctx, node);
  };
  const tight = (node: Node) =>
    ['Identifier', 'MemberExpression', 'CallExpression', 'NumericLiteral', 'TSNonNullExpression'].includes(node.type) ||
    (node.type === 'BinaryExpression' && ['+', '-', '*', '/', '%'].includes(String(node.operator))) ||
    (node.extra as { parenthesized?: boolean } | undefined)?.parenthesized
      ? src(node)
      : `(${src(node)})`;

  const offByOne = (node: Node, ctx: Context, context: Node) => {
    if (node.type === 'NumericLiteral' && Number.isInteger(node.value)) {
      const n = Number(node.value);
      add(node.start, node.end, String(n + 1), 'off_by_one', ctx, context);
      if (n >= 1) add(node.start, node.end, String(n - 1), 'off_by_one', ctx, context);
      return;
    }
    if (node.type === 'BinaryExpression' && ['+', '-'].includes(String(node.operator)) && src(node.right as Node) === '1') return; // dropped below
    if (node.type === 'Identifier' && ctx.scope && !ctx.scope.numeric.has(String(node.name))) return;
    if (!['Identifier', 'CallExpression', 'BinaryExpression', 'MemberExpression'].includes(node.type)) return;
    add(node.start, node.end, `${tight(node)} + 1`, 'off_by_one', ctx, context);
    add(node.start, node.end, `${tight(node)} - 1`, 'off_by_one', ctx, context);
  };

  const invert = (test: Node, ctx: Context) => {
    if (test.type === 'BinaryExpression' && INVERSE[String(test.operator)])
      swapOperator(test, INVERSE[String(test.operator)]!, 'condition', ctx);
    else if (test.type === 'UnaryExpression' && test.operator === '!') replace(test, src(test.argument as Node), 'condition', ctx);
    else replace(test, `!${tight(test)}`, 'condition', ctx);
  };

  const returnValue = (expression: Node, ctx: Context) => {
    if (['StringLiteral', 'TemplateLiteral', 'NullLiteral', 'ObjectExpression', 'ArrayExpression'].includes(expression.type)) return;
    const booleanLike =
      expression.type === 'BooleanLiteral' ||
      (expression.type === 'UnaryExpression' && expression.operator === '!') ||
      ((expression.type === 'BinaryExpression' || expression.type === 'LogicalExpression') &&
        BOOLEAN_OPERATORS.has(String(expression.operator)));
    replace(expression, booleanLike ? `!(${src(expression)})` : `${tight(expression)} + 1`, 'return_value', ctx);
  };

  /** Each pair of neighbours swapped (as text), when they differ. */
  const swapAdjacent = (items: Node[], family: BugFamily, ctx: Context) => {
    for (let i = 0; i + 1 < items.length; i++) {
      const [a, b] = [items[i]!, items[i + 1]!];
      if (
        src(a) === src(b) ||
        a.type === 'RestElement' ||
        b.type === 'RestElement' ||
        a.type === 'AssignmentPattern' ||
        b.type === 'AssignmentPattern'
      )
        continue;
      add(a.start, b.end, `${src(b)}${text.slice(a.end, b.start)}${src(a)}`, family, ctx);
    }
  };

  /** `bound`: the function's name when it is one the tests can call (declared, bound to a name, a method); null for a callback. */
  const visit = (node: Node, ctx: Context, bound: string | null): void => {
    if (FUNCTIONS.has(node.type)) {
      const scope = scopeOf(node, bound ?? ctx.scope?.name ?? 'an anonymous function');
      const inner: Context = { scope, named: bound !== null, frozen: false, comparator: false };
      if (bound !== null && !ctx.scope) swapAdjacent(node.params as Node[], 'variable', inner);
      const body = node.body as Node;
      if (bound !== null && node.type === 'ArrowFunctionExpression' && body.type !== 'BlockStatement') returnValue(body, inner);
      visitAll(node, { ...inner, comparator: ctx.comparator && node.type === 'ArrowFunctionExpression' });
      return;
    }
    if (!ctx.frozen) edit(node, ctx);
    if (node.type === 'ForStatement') {
      for (const part of ['init', 'test', 'body'] as const) if (isNode(node[part])) visit(node[part] as Node, ctx, null);
      return;
    }
    if (node.type === 'WhileStatement' || node.type === 'DoWhileStatement') {
      visit(node.test as Node, { ...ctx, frozen: true }, null);
      visit(node.body as Node, ctx, null);
      return;
    }
    if (node.type === 'CallExpression' && isSortCall(node)) {
      visit(node.callee as Node, ctx, null);
      for (const arg of node.arguments as Node[]) visit(arg, { ...ctx, comparator: true }, null);
      return;
    }
    visitAll(node, ctx);
  };
  const visitAll = (node: Node, ctx: Context) => {
    for (const child of children(node)) visit(child, ctx, boundName(node, child));
  };

  const edit = (node: Node, ctx: Context) => {
    switch (node.type) {
      case 'ReturnStatement':
        if (node.argument && ctx.named) returnValue(node.argument as Node, ctx);
        break;
      case 'BinaryExpression': {
        const op = String(node.operator);
        const [left, right] = [node.left as Node, node.right as Node];
        const stringy = [left, right].some((s) => s.type === 'StringLiteral' || s.type === 'TemplateLiteral');
        if (ARITHMETIC[op] && !stringy) swapOperator(node, ARITHMETIC[op]!, 'operator', ctx);
        if (BOUNDARY[op]) swapOperator(node, BOUNDARY[op]!, 'boundary', ctx);
        if (['===', '!==', '==', '!='].includes(op)) swapOperator(node, INVERSE[op]!, 'condition', ctx);
        if (NON_COMMUTATIVE.has(op) && src(left) !== src(right))
          replace(node, `${src(right)}${text.slice(left.end, right.start)}${src(left)}`, ctx.comparator ? 'ordering' : 'operator', ctx);
        if ((op === '+' || op === '-') && src(right) === '1' && !stringy) replace(node, src(left), 'off_by_one', ctx);
        if (op === '+' && src(left) === '1') replace(node, src(right), 'off_by_one', ctx);
        if (op === '/' && !ctx.comparator) replace(node, `Math.floor(${src(node)})`, 'rounding', ctx);
        break;
      }
      case 'LogicalExpression': {
        const op = String(node.operator);
        if (op === '??') break;
        swapOperator(node, op === '&&' ? '||' : '&&', 'operator', ctx);
        replace(node, src(node.left as Node), 'condition', ctx);
        replace(node, src(node.right as Node), 'condition', ctx);
        break;
      }
      case 'UnaryExpression':
        if (node.operator === '!') replace(node, src(node.argument as Node), 'condition', ctx);
        break;
      case 'AssignmentExpression': {
        const op = String(node.operator);
        const [left, right] = [node.left as Node, node.right as Node];
        if (left.type === 'Identifier' && ctx.scope?.whileNames.has(String(left.name))) break;
        const swapped: Record<string, string> = { '+=': '-=', '-=': '+=', '*=': '/=', '/=': '*=' };
        if (swapped[op]) swapOperator(node, swapped[op]!, 'operator', ctx);
        if (['+=', '-=', '*=', '||=', '??='].includes(op) && op.length === 2) swapOperator(node, '=', 'accumulation', ctx);
        if (op === '=' && right.type === 'BinaryExpression' && right.operator === '+') {
          // `total = total + x`, `m[k] = (m[k] ?? 0) + x`: the running value dropped.
          const first = src(right.left as Node).replace(/^\(|\)$/g, '');
          if (first === src(left) || first.startsWith(`${src(left)} ??`) || first.startsWith(`${src(left)} ||`))
            replace(right, src(right.right as Node), 'accumulation', ctx);
        }
        break;
      }
      case 'UpdateExpression': {
        const argument = node.argument as Node;
        if (argument.type === 'Identifier' && ctx.scope?.whileNames.has(String(argument.name))) break;
        const operator = String(node.operator);
        const at = node.prefix ? node.start : operatorAt(argument.end, node.end, operator);
        if (at >= 0) add(at, at + 2, operator === '++' ? '--' : '++', 'operator', ctx, node);
        break;
      }
      case 'ConditionalExpression':
        replace(node, `${src(node.test as Node)} ? ${src(node.alternate as Node)} : ${src(node.consequent as Node)}`, 'condition', ctx);
        break;
      case 'IfStatement': {
        invert(node.test as Node, ctx);
        const consequent = node.consequent as Node;
        const single =
          consequent.type === 'BlockStatement'
            ? (consequent.body as Node[]).length === 1
              ? (consequent.body as Node[])[0]!
              : null
            : consequent;
        if (!node.alternate && single && !src(single).includes('\n')) {
          // The guard missing: its statement always runs; or the whole special case missing.
          replace(node, src(single), 'condition', ctx);
          replace(node, '', 'condition', ctx);
        }
        break;
      }
      case 'ForStatement': {
        const init = node.init as Node | null;
        const declarator = init?.type === 'VariableDeclaration' ? (init.declarations as Node[])[0] : null;
        if (declarator && isNode(declarator.init) && declarator.init.type === 'NumericLiteral') offByOne(declarator.init, ctx, init!);
        break;
      }
      case 'MemberExpression':
      case 'OptionalMemberExpression': {
        const property = node.property as Node;
        if (node.computed && property.type !== 'StringLiteral') offByOne(property, ctx, node);
        break;
      }
      case 'CallExpression':
        callEdits(node, ctx);
        break;
    }
  };

  const callEdits = (node: Node, ctx: Context) => {
    const callee = node.callee as Node;
    const args = node.arguments as Node[];
    const method =
      callee.type === 'MemberExpression' && !callee.computed && (callee.property as Node).type === 'Identifier'
        ? (callee.property as Node)
        : null;
    const name = method ? String(method.name) : callee.type === 'Identifier' ? String(callee.name) : '';
    const onMath = method && src(callee.object as Node) === 'Math';
    if (method && BOUNDED_CALLS.has(name)) for (const arg of args.slice(0, 2)) offByOne(arg, ctx, node);
    if (method && Object.hasOwn(METHODS, name) && (onMath || !['min', 'max'].includes(name)))
      add(method.start, method.end, METHODS[name]!, 'call', ctx, node);
    if (onMath && ROUNDING[name]) {
      for (const to of ROUNDING[name]!) add(method!.start, method!.end, to, 'rounding', ctx, node);
      if (args.length === 1) replace(node, src(args[0]!), 'rounding', ctx);
    }
    if (method && name === 'toFixed' && args[0]?.type === 'NumericLiteral')
      add(args[0].start, args[0].end, String(Number(args[0].value) + 1), 'rounding', ctx, node);
    if (callee.type === 'Identifier' && localFunctions.has(name)) swapAdjacent(args, 'variable', ctx);
    if (method && PREDICATE_CALLS.has(name)) {
      const predicate = args[0];
      if (name === 'filter') replace(node, src(callee.object as Node), 'condition', ctx);
      if (predicate?.type === 'ArrowFunctionExpression' && (predicate.body as Node).type !== 'BlockStatement')
        invert(predicate.body as Node, ctx);
    }
    if (method && name === 'sort' && args.length === 1) replace(node, `${src(callee)}()`, 'ordering', ctx);
    if (method && name === 'reverse' && args.length === 0) replace(node, src(callee.object as Node), 'ordering', ctx);
  };

  visit(root, { scope: null, named: false, frozen: false, comparator: false }, null);
  wrongVariables(root, add);
  return edits;
}

/** `xs.sort(…)`, `xs.toSorted(…)`: its comparator's operands are a sort order. */
function isSortCall(node: Node): boolean {
  const callee = node.callee as Node;
  return callee.type === 'MemberExpression' && !callee.computed && ['sort', 'toSorted'].includes(String((callee.property as Node).name));
}

/** A function's scope: its name, the names it reads as numbers, the names its `while` tests read. */
function scopeOf(fn: Node, name: string): Scope {
  const scope: Scope = { name, numeric: new Set(), whileNames: new Set() };
  const walk = (n: Node, inWhile: boolean) => {
    if (n !== fn && FUNCTIONS.has(n.type) && n.type !== 'ArrowFunctionExpression') return;
    if (n.type === 'BinaryExpression' && !inWhile) {
      for (const side of [n.left as Node, n.right as Node]) if (side.type === 'Identifier') scope.numeric.add(String(side.name));
    }
    if (n.type === 'Identifier' && inWhile) scope.whileNames.add(String(n.name));
    if (n.type === 'UpdateExpression' && (n.argument as Node).type === 'Identifier') scope.numeric.add(String((n.argument as Node).name));
    const test = n.type === 'WhileStatement' || n.type === 'DoWhileStatement' ? (n.test as Node) : null;
    for (const child of children(n)) walk(child, inWhile || child === test);
  };
  walk(fn, false);
  return scope;
}

/** The name of `child` when it is a function the tests can call: declared, bound to a name, or a method. */
function boundName(parent: Node, child: Node): string | null {
  if (!FUNCTIONS.has(child.type)) return null;
  const id = (child.id ?? child.key) as Node | undefined;
  if (child.type === 'FunctionDeclaration' || child.type === 'ObjectMethod' || child.type === 'ClassMethod')
    return id?.type === 'Identifier' ? String(id.name) : 'a function';
  if (parent.type === 'VariableDeclarator' && parent.init === child && isNode(parent.id) && parent.id.type === 'Identifier')
    return String(parent.id.name);
  if ((parent.type === 'ObjectProperty' || parent.type === 'ClassProperty') && isNode(parent.key) && parent.key.type === 'Identifier')
    return String(parent.key.name);
  return null;
}

/** The wrong variable: an operand of arithmetic or a comparison replaced by another numeric name of the same function. */
function wrongVariables(
  root: Node,
  add: (start: number, end: number, replacement: string, family: BugFamily, ctx: Context, context?: Node) => void,
): void {
  const walkFunctions = (n: Node, bound: string | null) => {
    if (FUNCTIONS.has(n.type) && bound !== null) {
      const scope = scopeOf(n, bound);
      const declared = declaredNames(n);
      const names = [...scope.numeric].filter((name) => declared.has(name));
      const available = (name: string, site: Node) =>
        declared.get(name)!.some((b) => b.from <= site.start && b.scope.start <= site.start && site.end <= b.scope.end);
      const ctx: Context = { scope, named: true, frozen: false, comparator: false };
      const walk = (m: Node) => {
        if (m !== n && FUNCTIONS.has(m.type)) return;
        if (m.type === 'BinaryExpression' && scope.whileNames.size === 0) {
          const sides = [m.left as Node, m.right as Node];
          const present = new Set(sides.filter((s) => s.type === 'Identifier').map((s) => String(s.name)));
          for (const side of sides) {
            if (side.type !== 'Identifier' || !declared.has(String(side.name))) continue;
            for (const other of names)
              if (!present.has(other) && available(other, side)) add(side.start, side.end, other, 'variable', ctx, m);
          }
        }
        for (const child of children(m)) walk(child);
      };
      walk(n);
    }
    for (const child of children(n)) walkFunctions(child, boundName(n, child));
  };
  walkFunctions(root, null);
}

/** Where a declared name can be read: from `from` on, within `scope` (its block, or the function for `var`). */
interface Binding {
  from: number;
  scope: { start: number; end: number };
}

const BLOCKS = new Set(['BlockStatement', 'ForStatement', 'ForInStatement', 'ForOfStatement', 'SwitchStatement', 'StaticBlock']);

/**
 * Parameters and declared locals of a function (not of the functions inside it), each with
 * where it can be read without a ReferenceError or an `undefined`: a parameter anywhere in
 * the function; a `let`/`const`/`var` after its declarator (a loop's variable in its body)
 * and, for `let`/`const`, inside its block only.
 */
function declaredNames(fn: Node): Map<string, Binding[]> {
  const names = new Map<string, Binding[]>();
  const bind = (pattern: Node | null | undefined, binding: Binding) => {
    if (!pattern) return;
    if (pattern.type === 'Identifier') names.set(String(pattern.name), [...(names.get(String(pattern.name)) ?? []), binding]);
    else if (pattern.type === 'AssignmentPattern') bind(pattern.left as Node, binding);
  };
  const whole = { start: fn.start, end: fn.end };
  for (const param of fn.params as Node[]) bind(param, { from: fn.start, scope: whole });
  const walk = (n: Node, parent: Node | null, block: Node) => {
    if (n !== fn && FUNCTIONS.has(n.type)) return;
    if (n.type === 'VariableDeclaration') {
      const loop = parent && (parent.type === 'ForOfStatement' || parent.type === 'ForInStatement') && parent.left === n ? parent : null;
      const scope = n.kind === 'var' ? whole : { start: block.start, end: block.end };
      for (const d of n.declarations as Node[]) bind(d.id as Node, { from: loop ? (loop.body as Node).start : d.end, scope });
    }
    const inner = n !== fn && BLOCKS.has(n.type) ? n : block;
    for (const child of children(n)) walk(child, n, inner);
  };
  walk(fn, null, fn);
  return names;
}
