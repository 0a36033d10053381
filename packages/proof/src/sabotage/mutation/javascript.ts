/** Mutation sites in JavaScript/TypeScript, found with @babel/parser and spliced as text. */
import { parse } from '@babel/parser';
import { lineAt, type Edit } from './edits.js';

interface Node {
  type: string;
  start: number;
  end: number;
  [key: string]: unknown;
}

const ARITHMETIC: Record<string, string[]> = { '+': ['-'], '-': ['+'], '*': ['/'], '/': ['*'], '%': ['*'] };
const COMPARISON: Record<string, string[]> = {
  '<': ['<=', '>='], '<=': ['<', '>'], '>': ['>=', '<='], '>=': ['>', '<'],
  '===': ['!=='], '!==': ['==='], '==': ['!='], '!=': ['=='],
};
const LOGICAL: Record<string, string[]> = { '&&': ['||'], '||': ['&&'], '??': ['&&'] };
const ASSIGNMENT: Record<string, string[]> = { '+=': ['-='], '-=': ['+='], '*=': ['/='], '/=': ['*='] };
const METHODS: Record<string, string> = {
  min: 'max', max: 'min', some: 'every', every: 'some', startsWith: 'endsWith', endsWith: 'startsWith',
  toLowerCase: 'toUpperCase', toUpperCase: 'toLowerCase', trimStart: 'trimEnd', trimEnd: 'trimStart',
  floor: 'ceil', ceil: 'floor', indexOf: 'lastIndexOf', lastIndexOf: 'indexOf', push: 'unshift', unshift: 'push',
};
const BOOLEAN_OPERATORS = new Set(['<', '<=', '>', '>=', '===', '!==', '==', '!=', '&&', '||', 'in', 'instanceof']);

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

export function javascriptEdits(path: string, text: string): Edit[] {
  const edits: Edit[] = [];
  const root = parseFile(path, text);
  const add = (start: number, end: number, replacement: string, family: Edit['family'], scope: string | null) => {
    edits.push({ file: path, start, end, replacement, family, scope, line: lineAt(text, start), change: `\`${clipCode(text.slice(start, end))}\` → \`${clipCode(replacement)}\`` });
  };
  const operatorAt = (from: number, to: number, operator: string) => {
    const index = text.indexOf(operator, from);
    return index >= 0 && index + operator.length <= to ? index : -1;
  };
  const swapOperator = (node: Node, left: Node, right: Node, table: Record<string, string[]>, family: Edit['family'], scope: string | null) => {
    const operator = String(node.operator);
    const at = operatorAt(left.end, right.start, operator);
    if (at < 0) return;
    for (const replacement of table[operator] ?? []) {
      edits.push({
        file: path, start: at, end: at + operator.length, replacement, family, scope, line: lineAt(text, at),
        change: `\`${clipCode(text.slice(node.start, node.end))}\` → \`${clipCode(text.slice(node.start, at) + replacement + text.slice(at + operator.length, node.end))}\``,
      });
    }
  };
  const returnValue = (expression: Node, scope: string | null) => {
    const source = text.slice(expression.start, expression.end);
    const simple = ['Identifier', 'MemberExpression', 'CallExpression', 'NumericLiteral', 'StringLiteral'].includes(expression.type) ||
      (expression.type === 'BinaryExpression' && ['+', '-', '*', '/', '%'].includes(String(expression.operator)));
    const wrapped = simple ? source : `(${source})`;
    const booleanLike = expression.type === 'BooleanLiteral' || (expression.type === 'UnaryExpression' && expression.operator === '!') ||
      ((expression.type === 'BinaryExpression' || expression.type === 'LogicalExpression') && BOOLEAN_OPERATORS.has(String(expression.operator)));
    if (booleanLike) add(expression.start, expression.end, `!(${source})`, 'return', scope);
    else add(expression.start, expression.end, `${wrapped} + 1`, 'return', scope);
  };

  const visit = (node: Node, scope: string | null): void => {
    let inner = scope;
    switch (node.type) {
      case 'FunctionDeclaration':
      case 'FunctionExpression':
      case 'ArrowFunctionExpression':
      case 'ObjectMethod':
      case 'ClassMethod': {
        const id = (node.id ?? node.key) as Node | undefined;
        inner = id && id.type === 'Identifier' ? String(id.name) : scope ?? 'an anonymous function';
        const body = node.body as Node;
        if (node.type === 'ArrowFunctionExpression' && body.type !== 'BlockStatement') returnValue(body, inner);
        break;
      }
      case 'VariableDeclarator': {
        const id = node.id as Node;
        const init = node.init as Node | null;
        if (init && (init.type === 'ArrowFunctionExpression' || init.type === 'FunctionExpression') && id.type === 'Identifier') {
          visit({ ...init, id } as Node, scope);
          return;
        }
        break;
      }
      case 'ReturnStatement':
        if (node.argument) returnValue(node.argument as Node, scope);
        break;
      case 'BinaryExpression': {
        const left = node.left as Node;
        const right = node.right as Node;
        swapOperator(node, left, right, ARITHMETIC, 'arithmetic', scope);
        swapOperator(node, left, right, COMPARISON, 'comparison', scope);
        break;
      }
      case 'LogicalExpression':
        swapOperator(node, node.left as Node, node.right as Node, LOGICAL, 'logical', scope);
        break;
      case 'AssignmentExpression':
        swapOperator(node, node.left as Node, node.right as Node, ASSIGNMENT, 'arithmetic', scope);
        break;
      case 'UpdateExpression': {
        const operator = String(node.operator);
        const at = node.prefix ? node.start : operatorAt((node.argument as Node).end, node.end, operator);
        if (at >= 0) add(at, at + 2, operator === '++' ? '--' : '++', 'arithmetic', scope);
        break;
      }
      case 'BooleanLiteral':
        add(node.start, node.end, node.value ? 'false' : 'true', 'boolean', scope);
        break;
      case 'NumericLiteral':
        if (typeof node.value === 'number' && Number.isInteger(node.value)) add(node.start, node.end, String(node.value + 1), 'constant', scope);
        break;
      case 'UnaryExpression':
        if (node.operator === '!' || node.operator === '-') add(node.start, (node.argument as Node).start, '', 'unary', scope);
        break;
      case 'MemberExpression': {
        const property = node.property as Node;
        if (!node.computed && property.type === 'Identifier' && Object.hasOwn(METHODS, String(property.name))) {
          add(property.start, property.end, METHODS[String(property.name)]!, 'method', scope);
        }
        break;
      }
    }
    for (const [key, value] of Object.entries(node)) {
      if (key === 'loc' || key === 'leadingComments' || key === 'trailingComments' || key === 'innerComments' || key === 'extra') continue;
      if (key.startsWith('type') && key !== 'type' && key !== 'typeParameters') continue;
      if (key === 'typeAnnotation' || key === 'returnType' || key === 'typeParameters') continue;
      if (Array.isArray(value)) {
        for (const child of value) if (isNode(child)) visit(child, inner);
      } else if (isNode(value)) visit(value, inner);
    }
  };
  visit(root, null);
  return edits;
}

function isNode(value: unknown): value is Node {
  return value !== null && typeof value === 'object' && typeof (value as Node).type === 'string' && typeof (value as Node).start === 'number';
}

function clipCode(code: string): string {
  const flat = code.replace(/\s+/g, ' ');
  return flat.length > 60 ? `${flat.slice(0, 57)}...` : flat;
}
