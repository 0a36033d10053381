/** Mutation sites in Python, found with web-tree-sitter and the tree-sitter-python grammar, spliced as text. */
import { createRequire } from 'node:module';
import { Language, Parser, type Node } from 'web-tree-sitter';
import { lineAt, type Edit } from './edits.js';

const require = createRequire(import.meta.url);

const ARITHMETIC: Record<string, string[]> = { '+': ['-'], '-': ['+'], '*': ['/'], '/': ['*'], '//': ['/'], '%': ['//'], '**': ['*'] };
const COMPARISON: Record<string, string[]> = {
  '<': ['<=', '>='], '<=': ['<', '>'], '>': ['>=', '<='], '>=': ['>', '<'], '==': ['!='], '!=': ['=='],
  in: ['not in'], 'not in': ['in'], is: ['is not'], 'is not': ['is'],
};
const BOOLEAN: Record<string, string[]> = { and: ['or'], or: ['and'] };
const AUGMENTED: Record<string, string[]> = { '+=': ['-='], '-=': ['+='], '*=': ['/='], '/=': ['*='] };
const CALLS: Record<string, string> = { min: 'max', max: 'min', any: 'all', all: 'any' };
const METHODS: Record<string, string> = {
  lower: 'upper', upper: 'lower', startswith: 'endswith', endswith: 'startswith', lstrip: 'rstrip', rstrip: 'lstrip',
  find: 'rfind', rfind: 'find', index: 'rindex',
};

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

export async function pythonEdits(path: string, text: string): Promise<Edit[]> {
  const tree = (await pythonParser()).parse(text);
  if (!tree) return [];
  const edits: Edit[] = [];
  const add = (start: number, end: number, replacement: string, family: Edit['family'], scope: string | null, context?: Node) => {
    const before = context ? text.slice(context.startIndex, context.endIndex) : text.slice(start, end);
    const after = context ? text.slice(context.startIndex, start) + replacement + text.slice(end, context.endIndex) : replacement;
    edits.push({ file: path, start, end, replacement, family, scope, line: lineAt(text, start), change: `\`${clipCode(before)}\` → \`${clipCode(after)}\`` });
  };
  const swapTokens = (node: Node, table: Record<string, string[]>, family: Edit['family'], scope: string | null) => {
    const children = node.children.filter((c): c is Node => c !== null);
    for (let i = 0; i < children.length; i++) {
      const child = children[i]!;
      if (child.isNamed) continue;
      // `not in` and `is not` are two tokens in the tree; treat them as one operator.
      const next = children[i + 1];
      const pair = next && !next.isNamed ? `${child.type} ${next.type}` : null;
      if (pair && table[pair]) {
        for (const r of table[pair]!) add(child.startIndex, next!.endIndex, r, family, scope, node);
        i++;
        continue;
      }
      for (const r of table[child.type] ?? []) add(child.startIndex, child.endIndex, r, family, scope, node);
    }
  };
  const returnValue = (expression: Node, scope: string | null) => {
    // `"A" + 1` or `None + 1` only raises a TypeError: a crash, not a bug worth teaching.
    if (['string', 'none', 'concatenated_string'].includes(expression.type)) return;
    const source = expression.text;
    const booleanLike = ['comparison_operator', 'boolean_operator', 'not_operator', 'true', 'false'].includes(expression.type);
    if (booleanLike) add(expression.startIndex, expression.endIndex, `not (${source})`, 'return', scope);
    else {
      const simple = ['identifier', 'call', 'attribute', 'integer', 'float', 'subscript'].includes(expression.type) ||
        (expression.type === 'binary_operator' && ['+', '-', '*', '/', '//', '%'].includes(expression.childForFieldName('operator')?.type ?? ''));
      add(expression.startIndex, expression.endIndex, `${simple ? source : `(${source})`} + 1`, 'return', scope);
    }
  };
  const visit = (node: Node, scope: string | null): void => {
    let inner = scope;
    switch (node.type) {
      case 'function_definition':
        inner = node.childForFieldName('name')?.text ?? scope;
        break;
      case 'return_statement': {
        const value = node.namedChildren.find((c): c is Node => c !== null);
        if (value && value.type !== 'expression_list') returnValue(value, scope);
        break;
      }
      case 'lambda': {
        const body = node.childForFieldName('body');
        if (body) returnValue(body, scope);
        break;
      }
      case 'binary_operator':
        swapTokens(node, ARITHMETIC, 'arithmetic', scope);
        break;
      case 'comparison_operator':
        swapTokens(node, COMPARISON, 'comparison', scope);
        break;
      case 'boolean_operator':
        swapTokens(node, BOOLEAN, 'logical', scope);
        break;
      case 'augmented_assignment':
        swapTokens(node, AUGMENTED, 'arithmetic', scope);
        break;
      case 'not_operator': {
        const argument = node.childForFieldName('argument');
        if (argument) add(node.startIndex, argument.startIndex, '', 'unary', scope, node);
        break;
      }
      case 'true':
      case 'false':
        add(node.startIndex, node.endIndex, node.type === 'true' ? 'False' : 'True', 'boolean', scope);
        break;
      case 'integer':
        if (/^\d+$/.test(node.text)) add(node.startIndex, node.endIndex, String(Number(node.text) + 1), 'constant', scope);
        break;
      case 'call': {
        const fn = node.childForFieldName('function');
        if (fn?.type === 'identifier' && CALLS[fn.text]) add(fn.startIndex, fn.endIndex, CALLS[fn.text]!, 'method', scope, node);
        if (fn?.type === 'attribute') {
          const attribute = fn.childForFieldName('attribute');
          const swap = attribute ? METHODS[attribute.text] : undefined;
          if (attribute && swap) add(attribute.startIndex, attribute.endIndex, swap, 'method', scope, node);
        }
        break;
      }
    }
    for (const child of node.children) if (child) visit(child, inner);
  };
  visit(tree.rootNode, null);
  tree.delete();
  return edits;
}

function clipCode(code: string): string {
  const flat = code.replace(/\s+/g, ' ');
  return flat.length > 60 ? `${flat.slice(0, 57)}...` : flat;
}
