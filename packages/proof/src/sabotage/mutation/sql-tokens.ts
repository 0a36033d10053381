/**
 * The tokens of one SQL query region (a function body, a view's query), from libpg-query's
 * scanner, each with its position in the file, its parenthesis depth and the clause it is
 * in (`select`, `where`, `on`…), and the helpers the SQL bug finder reads them with.
 */
import { scanSync } from 'libpg-query';

export type Clause =
  'statement' | 'select' | 'from' | 'on' | 'where' | 'group' | 'having' | 'order' | 'limit' | 'return' | 'assign' | 'if' | 'frozen';

export interface Token {
  text: string;
  upper: string;
  tokenName: string;
  /** 0 not a keyword, 4 reserved (libpg-query's keyword kinds). */
  keywordKind: number;
  /** Character offsets in the whole file. */
  start: number;
  end: number;
  depth: number;
  clause: Clause;
  /** The call this token's parentheses belong to (`sum` in `sum(amount)`), when it is inside one. */
  call: string | null;
}

const CLAUSE_KEYWORDS: Record<string, Clause> = {
  SELECT: 'select',
  FROM: 'from',
  JOIN: 'from',
  ON: 'on',
  USING: 'on',
  WHERE: 'where',
  GROUP: 'group',
  HAVING: 'having',
  ORDER: 'order',
  LIMIT: 'limit',
  OFFSET: 'limit',
  RETURN: 'return',
  RETURNING: 'frozen',
  IF: 'if',
  ELSIF: 'if',
  WHILE: 'frozen',
  INTO: 'frozen',
  VALUES: 'frozen',
  SET: 'frozen',
  UNION: 'statement',
  INTERSECT: 'statement',
  EXCEPT: 'statement',
  WINDOW: 'frozen',
  LOOP: 'statement',
  ':=': 'assign',
  THEN: 'statement',
};

/** Tokens of `region`, which starts at character `offset` of the file. */
export function scanRegion(region: string, offset: number): Token[] {
  let scanned: ReturnType<typeof scanSync>['tokens'];
  try {
    scanned = scanSync(region).tokens;
  } catch {
    return [];
  }
  const charAt = byteToChar(region);
  const tokens: Token[] = [];
  const frames: { clause: Clause; call: string | null }[] = [{ clause: 'statement', call: null }];
  for (const t of scanned) {
    const upper = t.text.toUpperCase();
    const previous = tokens.at(-1);
    if (t.text === ')' && frames.length > 1) frames.pop();
    const frame = frames.at(-1)!;
    const token: Token = {
      text: t.text,
      upper,
      tokenName: t.tokenName,
      keywordKind: t.keywordKind,
      start: offset + charAt(t.start),
      end: offset + charAt(t.end),
      depth: frames.length - 1,
      clause: frame.clause,
      call: frame.call,
    };
    const clause = CLAUSE_KEYWORDS[upper];
    // THEN ends an IF condition only; in a CASE it is part of the expression.
    if (clause && !(upper === 'THEN' && frame.clause !== 'if') && (t.keywordKind > 0 || upper === ':=')) {
      // `WHILE` and `IF` in PL/pgSQL; `FROM` inside `IS DISTINCT FROM` or `extract(… FROM …)` is not a clause.
      const distinctFrom = upper === 'FROM' && previous?.upper === 'DISTINCT';
      if (!distinctFrom && !(upper === 'FROM' && frame.call)) {
        frame.clause = clause;
        token.clause = clause === 'frozen' ? 'frozen' : token.clause;
      }
    }
    if (t.text === ';') frame.clause = 'statement';
    tokens.push(token);
    if (t.text === '(') {
      const isCall =
        previous !== undefined &&
        (previous.tokenName === 'IDENT' || (previous.keywordKind > 0 && previous.keywordKind < 4)) &&
        previous.end === token.start;
      const callName = previous && (isCall || /^(COALESCE|NULLIF|GREATEST|LEAST)$/.test(previous.upper)) ? previous.upper : null;
      frames.push({ clause: frame.clause, call: callName });
    }
  }
  return tokens;
}

/** Index of the parenthesis matching the one at `i` (either direction), or -1. */
export function matching(tokens: Token[], i: number): number {
  const step = tokens[i]!.text === '(' ? 1 : -1;
  let depth = 0;
  for (let j = i; j >= 0 && j < tokens.length; j += step) {
    if (tokens[j]!.text === '(') depth += step;
    else if (tokens[j]!.text === ')') depth -= step;
    if (depth === 0) return j;
  }
  return -1;
}

export const isWord = (t: Token | undefined): boolean =>
  t !== undefined && (t.tokenName === 'IDENT' || (t.keywordKind > 0 && t.keywordKind < 4));
export const isLiteral = (t: Token | undefined) => t !== undefined && ['ICONST', 'FCONST', 'SCONST', 'PARAM'].includes(t.tokenName);

/** The last token of the operand starting at `i` (a name, a literal, a call, a parenthesized group, with casts), or -1. */
export function operandEnd(tokens: Token[], i: number): number {
  const t = tokens[i];
  if (!t) return -1;
  let end: number;
  if (t.text === '(') end = matching(tokens, i);
  else if (isLiteral(t)) end = i;
  else if (isWord(t) && t.keywordKind !== 4) {
    end = i;
    while (tokens[end + 1]?.text === '.' && isWord(tokens[end + 2])) end += 2;
    if (tokens[end + 1]?.text === '(') end = matching(tokens, end + 1);
  } else return -1;
  while (end >= 0 && tokens[end + 1]?.text === '::' && isWord(tokens[end + 2])) {
    end += 2;
    if (tokens[end + 1]?.text === '(') end = matching(tokens, end + 1);
  }
  return end;
}

/** The first token of the operand ending at `j`, or -1. */
export function operandStart(tokens: Token[], j: number): number {
  let start = j;
  // Casts: `x::numeric`, `x::numeric(10, 2)`.
  for (;;) {
    let k = start;
    if (
      tokens[k]?.text === ')' &&
      tokens[matching(tokens, k) - 1] &&
      isWord(tokens[matching(tokens, k) - 1]) &&
      tokens[matching(tokens, k) - 2]?.text === '::'
    )
      k = matching(tokens, k) - 1;
    if (isWord(tokens[k]) && tokens[k - 1]?.text === '::') start = k - 2;
    else break;
  }
  const t = tokens[start];
  if (!t) return -1;
  if (t.text === ')') {
    const open = matching(tokens, start);
    if (open < 0) return -1;
    return isWord(tokens[open - 1]) && tokens[open - 1]!.keywordKind !== 4 ? qualifiedStart(tokens, open - 1) : open;
  }
  if (isLiteral(t)) return start;
  if (isWord(t) && t.keywordKind !== 4) return qualifiedStart(tokens, start);
  return -1;
}

function qualifiedStart(tokens: Token[], i: number): number {
  let start = i;
  while (tokens[start - 1]?.text === '.' && isWord(tokens[start - 2])) start -= 2;
  return start;
}

/** Character offset → UTF-8 byte offset conversion, the other way round: the scanner counts bytes. */
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
