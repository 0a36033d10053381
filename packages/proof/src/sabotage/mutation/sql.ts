/**
 * Mutation sites in SQL, found with libpg-query's scanner (the real PostgreSQL lexer)
 * and spliced as text. Function bodies (dollar-quoted strings) are scanned too, so
 * operators inside `LANGUAGE sql` and PL/pgSQL bodies are reached.
 */
import { scanSync, type ScanToken } from 'libpg-query';
import { loadSqlParser } from '../../runners/sql-script.js';
import { lineAt, type Edit } from './edits.js';

const SWAPS: Record<string, { to: string[]; family: Edit['family'] }> = {
  '<': { to: ['<=', '>='], family: 'comparison' },
  '<=': { to: ['<', '>'], family: 'comparison' },
  '>': { to: ['>=', '<='], family: 'comparison' },
  '>=': { to: ['>', '<'], family: 'comparison' },
  '=': { to: ['<>'], family: 'comparison' },
  '<>': { to: ['='], family: 'comparison' },
  '!=': { to: ['='], family: 'comparison' },
  '+': { to: ['-'], family: 'arithmetic' },
  '-': { to: ['+'], family: 'arithmetic' },
  '*': { to: ['/'], family: 'arithmetic' },
  '/': { to: ['*'], family: 'arithmetic' },
  AND: { to: ['OR'], family: 'logical' },
  OR: { to: ['AND'], family: 'logical' },
  ASC: { to: ['DESC'], family: 'ordering' },
  DESC: { to: ['ASC'], family: 'ordering' },
  TRUE: { to: ['FALSE'], family: 'boolean' },
  FALSE: { to: ['TRUE'], family: 'boolean' },
  MIN: { to: ['MAX'], family: 'method' },
  MAX: { to: ['MIN'], family: 'method' },
  DISTINCT: { to: [''], family: 'method' },
};
// A select list item (or a RETURN expression) ends at one of these, at its own nesting depth.
const EXPRESSION_END = new Set([',', ';', 'FROM', 'WHERE', 'GROUP', 'ORDER', 'LIMIT', 'HAVING', 'UNION', 'INTERSECT', 'EXCEPT', 'INTO', 'OFFSET', 'WINDOW']);

export async function loadSqlMutator(): Promise<void> {
  await loadSqlParser();
}

/** Call `loadSqlMutator()` first. */
export function sqlEdits(path: string, text: string): Edit[] {
  const bytes = Buffer.from(text, 'utf8');
  const charAt = byteToChar(text);
  const edits: Edit[] = [];
  const scanRegion = (byteStart: number, byteEnd: number, scope: string | null) => {
    const region = bytes.subarray(byteStart, byteEnd).toString('utf8');
    let tokens: ScanToken[];
    try {
      tokens = scanSync(region).tokens;
    } catch {
      return;
    }
    const at = (t: ScanToken) => ({ start: charAt(byteStart + t.start), end: charAt(byteStart + t.end) });
    let functionName: string | null = null;
    for (let i = 0; i < tokens.length; i++) {
      const token = tokens[i]!;
      const word = token.text.toUpperCase();
      const { start, end } = at(token);
      const add = (s: number, e: number, replacement: string, family: Edit['family'], change: string) =>
        edits.push({ file: path, start: s, end: e, replacement, family, scope: scope ?? functionName, line: lineAt(text, s), change });
      if (word === 'FUNCTION' && tokens[i + 1]) functionName = tokens[i + 1]!.text;
      const swap = SWAPS[word] ?? SWAPS[token.text];
      if (swap && (token.keywordKind > 0 || !/^[A-Z]/.test(word) || (word === 'MIN' || word === 'MAX') && tokens[i + 1]?.text === '(')) {
        for (const to of swap.to) add(start, end, to, swap.family, `\`${token.text}\` → \`${to || '(removed)'}\``);
      }
      if (token.tokenName === 'ICONST') add(start, end, String(Number(token.text) + 1), 'constant', `\`${token.text}\` → \`${Number(token.text) + 1}\``);
      if (word === 'SELECT' || word === 'RETURN') {
        const from = word === 'SELECT' && tokens[i + 1]?.text.toUpperCase() === 'DISTINCT' ? i + 2 : i + 1;
        const last = expressionEnd(tokens, from);
        if (last >= from) {
          const s = at(tokens[from]!).start;
          const e = at(tokens[last]!).end;
          const expression = text.slice(s, e);
          const booleanLike = atDepthZero(tokens.slice(from, last + 1)).some((t) => BOOLEAN_TOKENS.has(t.text.toUpperCase()));
          const replacement = booleanLike ? `NOT (${expression})` : `(${expression}) + 1`;
          add(s, e, replacement, 'return', `\`${clip(expression)}\` → \`${clip(replacement)}\``);
        }
      }
      // Dollar-quoted bodies hold the function's code: scan inside them.
      const dollar = /^\$([A-Za-z_]*)\$/.exec(token.text);
      if (token.tokenName === 'SCONST' && dollar) {
        const tag = dollar[0].length;
        scanRegion(byteStart + token.start + tag, byteStart + token.end - tag, scope ?? functionName);
      }
    }
  };
  scanRegion(0, bytes.length, null);
  return edits;
}

const BOOLEAN_TOKENS = new Set(['<', '>', '<=', '>=', '=', '<>', '!=', 'AND', 'OR', 'NOT', 'EXISTS', 'IN', 'LIKE', 'TRUE', 'FALSE', 'IS']);

/** The tokens outside any parentheses: a comparison inside a subquery says nothing about the result's type. */
function atDepthZero(tokens: ScanToken[]): ScanToken[] {
  let depth = 0;
  return tokens.filter((t) => {
    if (t.text === '(') depth++;
    else if (t.text === ')') depth--;
    else return depth === 0;
    return false;
  });
}

/** Index of the last token of the expression starting at `from`, or from - 1 if there is none. */
function expressionEnd(tokens: ScanToken[], from: number): number {
  let depth = 0;
  let i = from;
  for (; i < tokens.length; i++) {
    const text = tokens[i]!.text.toUpperCase();
    if (text === '(') depth++;
    else if (text === ')') {
      if (depth === 0) break;
      depth--;
    } else if (depth === 0 && EXPRESSION_END.has(text)) break;
  }
  return i - 1;
}

function byteToChar(text: string): (byte: number) => number {
  if (Buffer.byteLength(text) === text.length) return (byte) => byte;
  const map: number[] = [];
  let byte = 0;
  let index = 0;
  for (const character of text) {
    const size = Buffer.byteLength(character);
    for (let k = 0; k < size; k++) map[byte + k] = index;
    byte += size;
    index += character.length;
  }
  map[byte] = text.length;
  return (b) => map[b] ?? text.length;
}

function clip(code: string): string {
  const flat = code.replace(/\s+/g, ' ');
  return flat.length > 60 ? `${flat.slice(0, 57)}...` : flat;
}
