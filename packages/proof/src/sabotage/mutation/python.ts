/**
 * Bug sites in Python, found with web-tree-sitter and the tree-sitter-python grammar,
 * spliced as text. Each edit is one realistic bug of a family (families.ts); return-value
 * perturbations are listed too, for the last resort. No edit touches a `while` condition
 * or a counter it reads: a hang is not a bug a candidate can read.
 */
import { createRequire } from 'node:module';
import { Language, Parser, type Node } from 'web-tree-sitter';
import type { BugFamily } from '../families.js';
import { changeText, lineAt, type Edit } from './edits.js';

const require = createRequire(import.meta.url);

const ARITHMETIC: Record<string, string> = { '+': '-', '-': '+', '*': '/', '/': '*', '**': '*' };
const BOUNDARY: Record<string, string> = { '<': '<=', '<=': '<', '>': '>=', '>=': '>' };
const INVERSE: Record<string, string> = {
  '<': '>=',
  '<=': '>',
  '>': '<=',
  '>=': '<',
  '==': '!=',
  '!=': '==',
  in: 'not in',
  'not in': 'in',
  is: 'is not',
  'is not': 'is',
};
const NON_COMMUTATIVE = new Set(['-', '/', '//', '%', '**']);
const CALLS: Record<string, string> = { min: 'max', max: 'min', any: 'all', all: 'any' };
const METHODS: Record<string, string> = {
  lower: 'upper',
  upper: 'lower',
  startswith: 'endswith',
  endswith: 'startswith',
  lstrip: 'rstrip',
  rstrip: 'lstrip',
  find: 'rfind',
  rfind: 'find',
  index: 'rindex',
  rindex: 'index',
  ljust: 'rjust',
  rjust: 'ljust',
};
const ROUNDING_CALLS: Record<string, string> = { floor: 'ceil', ceil: 'floor' };
/** Expressions that need no parentheses before `+ 1`. */
const TIGHT = new Set(['identifier', 'call', 'attribute', 'integer', 'float', 'subscript', 'parenthesized_expression', 'binary_operator']);

let parser: Promise<Parser> | undefined;

export function pythonParser(): Promise<Parser> {
  parser ??= (async () => {
    await Parser.init();
    const language = await Language.load(require.resolve('tree-sitter-python/tree-sitter-python.wasm'));
    const instance = new Parser();
    instance.setLanguage(language);
    return instance;
  })();
  return parser;
}

export async function parsesAsPython(text: string): Promise<boolean> {
  const tree = (await pythonParser()).parse(text);
  const ok = tree !== null && !tree.rootNode.hasError;
  tree?.delete();
  return ok;
}

interface FunctionInfo {
  name: string;
  /** Names read as numbers somewhere in the function (operands of arithmetic and comparisons). */
  numeric: Set<string>;
  /** Names a `while` condition reads: changing how they move could hang the loop. */
  whileNames: Set<string>;
}

const kids = (node: Node): Node[] => node.children.filter((c): c is Node => c !== null);
const named = (node: Node): Node[] => node.namedChildren.filter((c): c is Node => c !== null);
const operatorOf = (node: Node): string =>
  kids(node)
    .filter((c) => !c.isNamed)
    .map((c) => c.type)
    .join(' ');

export async function pythonEdits(path: string, text: string): Promise<Edit[]> {
  const tree = (await pythonParser()).parse(text);
  if (!tree) return [];
  const edits: Edit[] = [];
  const localFunctions = new Set<string>();
  for (const node of named(tree.rootNode)) {
    const fn = node.type === 'decorated_definition' ? node.childForFieldName('definition') : node;
    if (fn?.type === 'function_definition') localFunctions.add(fn.childForFieldName('name')?.text ?? '');
  }

  /** One edit replacing [start, end); the change is shown on `context` (default the replaced text). */
  const add = (start: number, end: number, replacement: string, family: BugFamily, fn: FunctionInfo | null, context?: Node) => {
    const before = context ? text.slice(context.startIndex, context.endIndex) : text.slice(start, end);
    const after = context ? text.slice(context.startIndex, start) + replacement + text.slice(end, context.endIndex) : replacement;
    edits.push({
      file: path,
      start,
      end,
      replacement,
      family,
      scope: fn?.name ?? null,
      line: lineAt(text, start),
      change: changeText(before, after),
    });
  };
  const replace = (node: Node, replacement: string, family: BugFamily, fn: FunctionInfo | null) =>
    add(node.startIndex, node.endIndex, replacement, family, fn);
  const tight = (node: Node) =>
    TIGHT.has(node.type) && !(node.type === 'binary_operator' && !['+', '-', '*', '/', '//', '%'].includes(operatorOf(node)))
      ? node.text
      : `(${node.text})`;

  /** An index or bound moved by one: a literal ±1, a `± 1` adjustment dropped, otherwise `± 1` added. */
  const offByOne = (node: Node, fn: FunctionInfo | null, context: Node) => {
    if (node.type === 'integer' && /^\d+$/.test(node.text)) {
      const n = Number(node.text);
      add(node.startIndex, node.endIndex, String(n + 1), 'off_by_one', fn, context);
      if (n >= 1) add(node.startIndex, node.endIndex, String(n - 1), 'off_by_one', fn, context);
      return;
    }
    if (node.type === 'binary_operator' && ['+', '-'].includes(operatorOf(node)) && node.childForFieldName('right')?.text === '1') return; // dropped below
    if (node.type === 'identifier' && fn && !fn.numeric.has(node.text)) return;
    if (!['identifier', 'call', 'binary_operator', 'attribute', 'subscript', 'parenthesized_expression'].includes(node.type)) return;
    add(node.startIndex, node.endIndex, `${tight(node)} + 1`, 'off_by_one', fn, context);
    add(node.startIndex, node.endIndex, `${tight(node)} - 1`, 'off_by_one', fn, context);
  };

  /** An inverted condition: a comparison's complement, `not` dropped, otherwise `not (…)`. */
  const invert = (condition: Node, fn: FunctionInfo | null) => {
    const inner = condition.type === 'parenthesized_expression' ? (named(condition)[0] ?? condition) : condition;
    if (inner.type === 'comparison_operator' && named(inner).length === 2 && INVERSE[operatorOf(inner)]) {
      const ops = kids(inner).filter((c) => !c.isNamed);
      add(ops[0]!.startIndex, ops.at(-1)!.endIndex, INVERSE[operatorOf(inner)]!, 'condition', fn, inner);
    } else if (inner.type === 'not_operator') {
      const argument = inner.childForFieldName('argument');
      if (argument) add(inner.startIndex, inner.endIndex, argument.text, 'condition', fn);
    } else
      add(
        condition.startIndex,
        condition.endIndex,
        `not ${condition.type === 'parenthesized_expression' || TIGHT.has(condition.type) ? condition.text : `(${condition.text})`}`,
        'condition',
        fn,
      );
  };

  const returnValue = (expression: Node, fn: FunctionInfo | null) => {
    // `"A" + 1` or `None + 1` only raises a TypeError: a crash, not a bug worth teaching.
    if (['string', 'none', 'concatenated_string'].includes(expression.type)) return;
    const booleanLike = ['comparison_operator', 'boolean_operator', 'not_operator', 'true', 'false'].includes(expression.type);
    replace(expression, booleanLike ? `not (${expression.text})` : `${tight(expression)} + 1`, 'return_value', fn);
  };

  const visit = (node: Node, fn: FunctionInfo | null, inWhileCondition: boolean): void => {
    let inner = fn;
    switch (node.type) {
      case 'function_definition': {
        inner = functionInfo(node);
        const parameters = node.childForFieldName('parameters');
        // Swapped parameters of a module-level function: its callers pass them in the documented order.
        if (parameters && !fn)
          swapAdjacent(
            named(parameters).filter((p) => p.type === 'identifier' || p.type === 'typed_parameter'),
            'variable',
            inner,
          );
        break;
      }
      case 'return_statement': {
        const value = named(node)[0];
        if (value && value.type !== 'expression_list') returnValue(value, fn);
        break;
      }
      case 'lambda': {
        const body = node.childForFieldName('body');
        if (body) returnValue(body, fn);
        break;
      }
      case 'while_statement': {
        const condition = node.childForFieldName('condition');
        if (condition) visit(condition, fn, true);
        for (const child of named(node)) if (child !== condition && child.id !== condition?.id) visit(child, fn, inWhileCondition);
        return;
      }
      case 'binary_operator': {
        if (inWhileCondition) break;
        const op = operatorOf(node);
        const left = node.childForFieldName('left');
        const right = node.childForFieldName('right');
        const operatorToken = kids(node).find((c) => !c.isNamed);
        if (!left || !right || !operatorToken) break;
        const stringy = [left, right].some((s) => ['string', 'concatenated_string'].includes(s.type));
        if (ARITHMETIC[op] && !stringy) add(operatorToken.startIndex, operatorToken.endIndex, ARITHMETIC[op]!, 'operator', fn, node);
        if (op === '/' || op === '//') add(operatorToken.startIndex, operatorToken.endIndex, op === '/' ? '//' : '/', 'rounding', fn, node);
        if (NON_COMMUTATIVE.has(op) && left.text !== right.text)
          add(node.startIndex, node.endIndex, `${right.text} ${op} ${left.text}`, 'operator', fn);
        if ((op === '+' || op === '-') && right.text === '1') replace(node, left.text, 'off_by_one', fn);
        if (op === '+' && left.text === '1') replace(node, right.text, 'off_by_one', fn);
        break;
      }
      case 'comparison_operator': {
        if (inWhileCondition || named(node).length !== 2) break;
        const op = operatorOf(node);
        const ops = kids(node).filter((c) => !c.isNamed);
        if (BOUNDARY[op]) add(ops[0]!.startIndex, ops.at(-1)!.endIndex, BOUNDARY[op]!, 'boundary', fn, node);
        if (['==', '!=', 'in', 'not in', 'is', 'is not'].includes(op))
          add(ops[0]!.startIndex, ops.at(-1)!.endIndex, INVERSE[op]!, 'condition', fn, node);
        break;
      }
      case 'boolean_operator': {
        if (inWhileCondition) break;
        const left = node.childForFieldName('left');
        const right = node.childForFieldName('right');
        const op = kids(node).find((c) => !c.isNamed);
        if (!left || !right || !op) break;
        add(op.startIndex, op.endIndex, op.type === 'and' ? 'or' : 'and', 'operator', fn, node);
        // A missing condition: one side of the combination dropped.
        add(node.startIndex, node.endIndex, left.text, 'condition', fn, node);
        add(node.startIndex, node.endIndex, right.text, 'condition', fn, node);
        break;
      }
      case 'not_operator': {
        const argument = node.childForFieldName('argument');
        if (argument && !inWhileCondition) add(node.startIndex, node.endIndex, argument.text, 'condition', fn, node);
        break;
      }
      case 'if_statement':
      case 'elif_clause': {
        const condition = node.childForFieldName('condition');
        if (condition) invert(condition, fn);
        const consequence = node.childForFieldName('consequence');
        const single = consequence && named(consequence).length === 1 ? named(consequence)[0]! : null;
        const alone = node.type === 'if_statement' && !named(node).some((c) => c.type === 'elif_clause' || c.type === 'else_clause');
        if (condition && single && alone && !single.text.includes('\n')) {
          // The guard missing: its statement always runs; or the whole special case missing.
          add(node.startIndex, node.endIndex, single.text, 'condition', fn);
          add(node.startIndex, node.endIndex, 'pass', 'condition', fn);
        }
        break;
      }
      case 'conditional_expression': {
        const [whenTrue, condition, whenFalse] = named(node);
        if (whenTrue && condition && whenFalse)
          add(node.startIndex, node.endIndex, `${whenFalse.text} if ${condition.text} else ${whenTrue.text}`, 'condition', fn);
        break;
      }
      case 'if_clause': {
        // A comprehension's filter missing, or inverted.
        const condition = named(node)[0];
        const previous = node.previousSibling;
        if (previous) add(previous.endIndex, node.endIndex, '', 'condition', fn, node.parent ?? undefined);
        if (condition) invert(condition, fn);
        break;
      }
      case 'augmented_assignment': {
        const left = node.childForFieldName('left');
        const op = kids(node).find((c) => !c.isNamed && c.type.endsWith('='));
        if (!left || !op || (fn && fn.whileNames.has(left.text))) break;
        const swapped: Record<string, string> = { '+=': '-=', '-=': '+=', '*=': '/=', '/=': '*=' };
        if (swapped[op.type]) add(op.startIndex, op.endIndex, swapped[op.type]!, 'operator', fn, node);
        if (['+=', '-=', '*=', '|='].includes(op.type)) add(op.startIndex, op.endIndex, '=', 'accumulation', fn, node);
        break;
      }
      case 'assignment': {
        // `total = total + x` (or `d[k] = d.get(k, 0) + x`): the running value dropped.
        const left = node.childForFieldName('left');
        const right = node.childForFieldName('right');
        if (left && right?.type === 'binary_operator' && operatorOf(right) === '+' && !(fn && fn.whileNames.has(left.text))) {
          const [first, second] = [right.childForFieldName('left'), right.childForFieldName('right')];
          const target = left.type === 'subscript' ? (left.childForFieldName('value')?.text ?? left.text) : left.text;
          if (
            first &&
            second &&
            (first.text === left.text || first.text.startsWith(`${target}.get(`) || first.text.startsWith(`${target}[`))
          ) {
            add(right.startIndex, right.endIndex, second.text, 'accumulation', fn, node);
          }
        }
        break;
      }
      case 'subscript': {
        const index = node.childForFieldName('subscript');
        if (!index) break;
        if (index.type === 'slice') for (const bound of named(index)) offByOne(bound, fn, node);
        else offByOne(index, fn, node);
        break;
      }
      case 'call':
        callEdits(node, fn);
        break;
    }
    for (const child of named(node)) visit(child, inner, inWhileCondition);
  };

  const callEdits = (node: Node, fn: FunctionInfo | null) => {
    const callee = node.childForFieldName('function');
    const args = node.childForFieldName('arguments');
    if (!callee || !args) return;
    const positional = named(args).filter((a) => a.type !== 'keyword_argument' && a.type !== 'comment');
    const keywords = named(args).filter((a) => a.type === 'keyword_argument');
    const name = callee.type === 'attribute' ? (callee.childForFieldName('attribute')?.text ?? '') : callee.text;
    const nameNode = callee.type === 'attribute' ? callee.childForFieldName('attribute') : callee;
    if (callee.type === 'identifier' && name === 'range') {
      for (const bound of positional.slice(0, 2)) offByOne(bound, fn, node);
      if (positional.length === 2) swapAdjacent(positional, 'variable', fn);
    }
    if (callee.type === 'identifier' && CALLS[name] && nameNode)
      add(nameNode.startIndex, nameNode.endIndex, CALLS[name]!, 'call', fn, node);
    if (callee.type === 'attribute' && METHODS[name] && nameNode)
      add(nameNode.startIndex, nameNode.endIndex, METHODS[name]!, 'call', fn, node);
    if (ROUNDING_CALLS[name] && nameNode) add(nameNode.startIndex, nameNode.endIndex, ROUNDING_CALLS[name]!, 'rounding', fn, node);
    if (callee.type === 'identifier' && name === 'round') {
      const [value, digits] = positional;
      if (value && digits) {
        add(node.startIndex, node.endIndex, `round(${value.text})`, 'rounding', fn, node);
        if (digits.type === 'integer') add(digits.startIndex, digits.endIndex, String(Number(digits.text) + 1), 'rounding', fn, node);
      } else if (value) add(callee.startIndex, callee.endIndex, 'int', 'rounding', fn, node);
    }
    if (callee.type === 'identifier' && localFunctions.has(name)) swapAdjacent(positional, 'variable', fn);
    if (name === 'sorted' || name === 'sort') {
      const reverse = keywords.find((k) => k.childForFieldName('name')?.text === 'reverse');
      const value = reverse?.childForFieldName('value');
      if (value && (value.text === 'True' || value.text === 'False'))
        add(value.startIndex, value.endIndex, value.text === 'True' ? 'False' : 'True', 'ordering', fn, node);
      else if (!reverse)
        add(
          args.endIndex - 1,
          args.endIndex - 1,
          `${positional.length + keywords.length > 0 ? ', ' : ''}reverse=True`,
          'ordering',
          fn,
          node,
        );
    }
  };

  /** Each pair of neighbours swapped (as text), when they differ. */
  const swapAdjacent = (items: Node[], family: BugFamily, fn: FunctionInfo | null) => {
    for (let i = 0; i + 1 < items.length; i++) {
      const [a, b] = [items[i]!, items[i + 1]!];
      if (a.text === b.text) continue;
      add(a.startIndex, b.endIndex, `${b.text}${text.slice(a.endIndex, b.startIndex)}${a.text}`, family, fn);
    }
  };

  visit(tree.rootNode, null, false);
  wrongVariables(tree.rootNode, add);
  tree.delete();
  return edits;
}

/** What a function's body says about its names: which are numbers, which a `while` reads. */
function functionInfo(node: Node): FunctionInfo {
  const info: FunctionInfo = { name: node.childForFieldName('name')?.text ?? 'a function', numeric: new Set(), whileNames: new Set() };
  const walk = (n: Node, inWhile: boolean) => {
    if (n.type === 'function_definition' && n.id !== node.id) return;
    if ((n.type === 'binary_operator' || n.type === 'comparison_operator') && !inWhile) {
      for (const operand of named(n)) if (operand.type === 'identifier') info.numeric.add(operand.text);
    }
    if (n.type === 'identifier' && inWhile) info.whileNames.add(n.text);
    if (n.type === 'for_statement' && n.childForFieldName('right')?.text.startsWith('range(')) {
      const left = n.childForFieldName('left');
      if (left?.type === 'identifier') info.numeric.add(left.text);
    }
    const condition = n.type === 'while_statement' ? n.childForFieldName('condition') : null;
    for (const child of named(n)) walk(child, inWhile || (condition !== null && child.id === condition.id));
  };
  walk(node, false);
  return info;
}

const COMPREHENSIONS = new Set(['list_comprehension', 'set_comprehension', 'dictionary_comprehension', 'generator_expression']);
const PATTERNS = new Set(['pattern_list', 'tuple_pattern', 'list_pattern', 'parenthesized_expression', 'expression_list', 'list', 'tuple']);

/** The identifiers a binding target names (`a`, `a, b`, `(a, [b])`), not attributes or subscripts. */
function targetNames(target: Node | null): string[] {
  if (!target) return [];
  if (target.type === 'identifier') return [target.text];
  return PATTERNS.has(target.type) ? named(target).flatMap(targetNames) : [];
}

/**
 * Where each name of a function can be read without a NameError: a parameter, a name the
 * function never binds (a global, a builtin), or a local from its first binding on (an
 * assignment once it completed, a loop variable in and after its loop's body); a
 * comprehension's variable only inside its comprehension. Approximate (a binding in one
 * branch counts for the code after it), but it never offers a local before any binding.
 */
function nameAvailability(fn: Node): (name: string, site: Node) => boolean {
  const always = new Set<string>();
  const from = new Map<string, number[]>();
  const inside = new Map<string, Node[]>();
  const bind = (names: string[], at: number) => {
    for (const name of names) from.set(name, [...(from.get(name) ?? []), at]);
  };
  const parameters = fn.childForFieldName('parameters');
  for (const parameter of parameters ? named(parameters) : []) {
    const name =
      parameter.type === 'identifier'
        ? parameter
        : (parameter.childForFieldName('name') ?? named(parameter).find((c) => c.type === 'identifier'));
    if (name) always.add(name.text);
  }
  const walk = (n: Node) => {
    if (n.type === 'lambda') {
      // Its parameters exist inside it only.
      const own = n.childForFieldName('parameters');
      for (const parameter of own ? named(own).filter((c) => c.type === 'identifier') : [])
        inside.set(parameter.text, [...(inside.get(parameter.text) ?? []), n]);
      return;
    }
    if (n.id !== fn.id && (n.type === 'function_definition' || n.type === 'class_definition')) {
      bind([n.childForFieldName('name')?.text ?? ''], n.endIndex);
      return;
    }
    switch (n.type) {
      case 'assignment':
      case 'augmented_assignment':
        bind(targetNames(n.childForFieldName('left')), n.endIndex);
        break;
      case 'named_expression':
        bind(targetNames(n.childForFieldName('name')), n.endIndex);
        break;
      case 'for_statement':
        bind(targetNames(n.childForFieldName('left')), n.childForFieldName('body')?.startIndex ?? n.endIndex);
        break;
      case 'global_statement':
      case 'nonlocal_statement':
        for (const name of named(n)) always.add(name.text);
        break;
    }
    if (COMPREHENSIONS.has(n.type)) {
      for (const clause of named(n).filter((c) => c.type === 'for_in_clause')) {
        for (const name of targetNames(clause.childForFieldName('left'))) inside.set(name, [...(inside.get(name) ?? []), n]);
      }
    }
    for (const child of named(n)) walk(child);
  };
  walk(fn.childForFieldName('body') ?? fn);
  return (name, site) => {
    if (always.has(name)) return true;
    const local = from.get(name);
    if (local) return local.some((at) => at <= site.startIndex);
    const scopes = inside.get(name);
    if (scopes) return scopes.some((c) => c.startIndex <= site.startIndex && site.endIndex <= c.endIndex);
    return true;
  };
}

/**
 * The wrong variable: an operand of arithmetic or a comparison replaced by another name
 * the same function uses as a number (`(previous - current) / previous` → `… / current`),
 * only a name readable at that point: one not yet assigned would crash (a NameError), not
 * compute a wrong result a candidate can read.
 */
function wrongVariables(
  root: Node,
  add: (start: number, end: number, replacement: string, family: BugFamily, fn: FunctionInfo | null, context?: Node) => void,
): void {
  const functions: Node[] = [];
  const collect = (n: Node) => {
    if (n.type === 'function_definition') functions.push(n);
    for (const child of named(n)) collect(child);
  };
  collect(root);
  for (const node of functions) {
    const info = functionInfo(node);
    const names = [...info.numeric].filter((n) => !info.whileNames.has(n));
    const available = nameAvailability(node);
    const body = node.childForFieldName('body');
    const walk = (n: Node) => {
      if (n.type === 'function_definition' || n.type === 'lambda') return;
      if ((n.type === 'binary_operator' || n.type === 'comparison_operator') && !info.whileNames.size) {
        for (const operand of named(n)) {
          if (operand.type !== 'identifier' || !info.numeric.has(operand.text)) continue;
          const others = new Set(
            named(n)
              .filter((o) => o.type === 'identifier')
              .map((o) => o.text),
          );
          for (const other of names)
            if (!others.has(other) && available(other, operand)) add(operand.startIndex, operand.endIndex, other, 'variable', info, n);
        }
      }
      for (const child of named(n)) walk(child);
    };
    if (body) walk(body);
  }
}
