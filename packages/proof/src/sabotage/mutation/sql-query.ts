/**
 * Bug sites inside one SQL query region (a function body, a view's query), read from its
 * tokens (sql-tokens.ts): a wrong filter predicate, join type or key, aggregate, DISTINCT,
 * NULL handling, boundary, operator, rounding, limit, sort order or column. Names are
 * swapped only for a column of the same kind, so a bug gives wrong rows, not an error.
 */
import type { AddEdit, Column, SqlSchema } from './sql.js';
import { isLiteral, isWord, matching, operandEnd, operandStart, type Token } from './sql-tokens.js';

const BOUNDARY: Record<string, string> = { '<': '<=', '<=': '<', '>': '>=', '>=': '>' };
const ARITHMETIC: Record<string, string> = { '+': '-', '-': '+', '*': '/', '/': '*' };
const AGGREGATES: Record<string, string[]> = { SUM: ['avg', 'max'], AVG: ['sum', 'max'], MIN: ['max'], MAX: ['min'], COUNT: [] };
const FILTERING = new Set(['where', 'having', 'on', 'if']);

export function queryEdits(tokens: Token[], text: string, schema: SqlSchema, add: AddEdit): void {
  const aliases = tableAliases(tokens, schema);
  const columnsInScope = [...new Set([...aliases.values()])].flatMap((t) => schema.tables.get(t) ?? []);
  const columnOf = (name: string): Column | undefined => columnsInScope.find((c) => c.name === name.toLowerCase());
  const span = (i: number, j: number): [number, number] => [tokens[i]!.start, tokens[j]!.end];
  const src = (i: number, j: number) => text.slice(tokens[i]!.start, tokens[j]!.end);
  /** The comparison around token `i` (an operator), as a span to show. */
  const around = (i: number): [number, number] => {
    const from = operandStart(tokens, i - 1);
    const to = operandEnd(tokens, i + 1);
    return from >= 0 && to >= 0 ? span(from, to) : span(i, i);
  };

  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.clause === 'frozen') continue;
    const next = tokens[i + 1];
    const previous = tokens[i - 1];
    const filtering = FILTERING.has(t.clause);

    // Comparisons: the boundary, and in a filter the predicate inverted or the wrong value.
    if (BOUNDARY[t.text]) add(t.start, t.end, BOUNDARY[t.text]!, filtering ? 'boundary' : 'boundary', around(i));
    if ((t.text === '=' || t.text === '<>' || t.text === '!=') && t.clause !== 'assign' && t.clause !== 'select' && t.clause !== 'return') {
      const family = t.clause === 'on' ? 'sql_join' : filtering ? 'sql_filter' : 'condition';
      add(t.start, t.end, t.text === '=' ? '<>' : '=', family, around(i));
      // `status = 'paid'` → `status = 'refunded'`: another value the data uses.
      const value = tokens[i + 1];
      if (t.text === '=' && value?.tokenName === 'SCONST' && value.text.startsWith("'") && filtering) {
        for (const other of schema.literals.filter((l) => l !== value.text).slice(0, 3))
          add(value.start, value.end, other, 'sql_filter', around(i));
      }
    }
    if (
      filtering &&
      (t.upper === 'AND' || t.upper === 'OR') &&
      t.keywordKind > 0 &&
      previous?.upper !== 'BETWEEN' &&
      !betweenAnd(tokens, i)
    ) {
      add(t.start, t.end, t.upper === 'AND' ? 'OR' : 'AND', t.clause === 'on' ? 'sql_join' : 'sql_filter', conditionSpan(tokens, i, span));
      // One side of the combination dropped: a missing condition.
      const leftStart = operandRunStart(tokens, i);
      const rightEnd = operandRunEnd(tokens, i);
      if (leftStart >= 0 && rightEnd > i + 1) {
        add(tokens[leftStart]!.start, tokens[i + 1]!.start, '', t.clause === 'on' ? 'sql_join' : 'sql_filter', span(leftStart, rightEnd));
        add(tokens[i - 1]!.end, tokens[rightEnd]!.end, '', t.clause === 'on' ? 'sql_join' : 'sql_filter', span(leftStart, rightEnd));
      }
    }
    if (t.upper === 'WHERE' && t.keywordKind > 0) {
      const end = clauseEnd(tokens, i);
      if (end > i) add(t.start, tokens[end]!.end, '', 'sql_filter', span(i, end));
    }

    // Joins: the type, and the key.
    if (t.upper === 'JOIN' && t.keywordKind > 0) {
      const kind = previous && ['LEFT', 'RIGHT', 'INNER', 'FULL'].includes(previous.upper) ? previous : null;
      const outer = kind && tokens[i - 2] && ['LEFT', 'RIGHT', 'FULL'].includes(tokens[i - 2]!.upper) ? tokens[i - 2]! : null;
      if (kind?.upper === 'LEFT' || kind?.upper === 'RIGHT' || kind?.upper === 'FULL')
        add(kind.start, kind.end, 'INNER', 'sql_join', span(i - 1, i));
      else if (previous?.upper === 'OUTER' && outer) add(outer.start, previous.end, 'INNER', 'sql_join', span(i - 2, i));
      else add(kind ? kind.start : t.start, t.start, 'LEFT ', 'sql_join', span(kind ? i - 1 : i, i));
    }
    if (
      t.clause === 'on' &&
      isWord(t) &&
      t.keywordKind !== 4 &&
      next?.text === '.' &&
      isWord(tokens[i + 2]) &&
      tokens[i + 3]?.text !== '('
    ) {
      const table = aliases.get(t.text.toLowerCase());
      const column = tokens[i + 2]!;
      const current = schema.tables.get(table ?? '')?.find((c) => c.name === column.text.toLowerCase());
      if (current) {
        for (const other of (schema.tables.get(table!) ?? [])
          .filter((c) => c.kind === current.kind && c.name !== current.name)
          .slice(0, 2)) {
          add(
            column.start,
            column.end,
            other.name,
            'sql_join',
            isComparison(tokens[i + 3]) ? around(i + 3) : isComparison(tokens[i - 1]) ? around(i - 1) : span(i, i + 2),
          );
        }
      }
    }

    // Aggregates: the wrong one, DISTINCT inside dropped, count(*) against a nullable column.
    if (next?.text === '(' && isWord(t) && t.end === next.start && AGGREGATES[t.upper]) {
      const close = matching(tokens, i + 1);
      const call: [number, number] = span(i, close >= 0 ? close : i);
      for (const to of AGGREGATES[t.upper]!) add(t.start, t.end, to, 'sql_aggregate', call);
      if (t.upper === 'SUM' && close > i + 2) add(t.start, t.end, 'count', 'sql_aggregate', call);
      const inside = tokens[i + 2];
      if (inside?.upper === 'DISTINCT') add(inside.start, tokens[i + 3]!.start, '', 'sql_grouping', call);
      if (inside?.text === '*' && tokens[i + 3]?.text === ')') {
        for (const column of columnsInScope.filter((c) => c.nullable).slice(0, 2))
          add(inside.start, inside.end, column.name, 'sql_null', call);
      }
      if (t.upper === 'COUNT' && inside && isWord(inside) && tokens[i + 3]?.text === ')' && columnOf(inside.text))
        add(inside.start, inside.end, '*', 'sql_null', call);
    }
    if (t.upper === 'DISTINCT' && previous?.upper === 'SELECT') add(previous.end, t.end, '', 'sql_grouping', span(i - 1, i));
    if (t.upper === 'SELECT' && t.keywordKind > 0 && next && next.upper !== 'DISTINCT' && rowsCanRepeat(tokens, i)) {
      add(t.end, t.end, ' DISTINCT', 'sql_grouping', span(i, i));
    }
    if (t.upper === 'UNION' && t.keywordKind > 0)
      add(
        t.end,
        next?.upper === 'ALL' ? next.end : t.end,
        next?.upper === 'ALL' ? '' : ' ALL',
        'sql_grouping',
        span(i, next?.upper === 'ALL' ? i + 1 : i),
      );

    // NULL handling.
    if (t.upper === 'COALESCE' && next?.text === '(') {
      const close = matching(tokens, i + 1);
      const firstEnd = argumentEnd(tokens, i + 2);
      if (close > 0 && firstEnd > i + 1 && firstEnd < close)
        add(t.start, tokens[close]!.end, src(i + 2, firstEnd), 'sql_null', span(i, close));
    }
    if (t.upper === 'IS' && t.keywordKind > 0) {
      if (next?.upper === 'NULL') add(t.end, t.end, ' NOT', 'sql_null', span(i, i + 1));
      if (next?.upper === 'NOT' && tokens[i + 2]?.upper === 'NULL') add(t.end, next.end, '', 'sql_null', span(i, i + 2));
      if (next?.upper === 'DISTINCT' && tokens[i + 2]?.upper === 'FROM') add(t.start, tokens[i + 2]!.end, '<>', 'sql_null', span(i, i + 2));
      if (next?.upper === 'NOT' && tokens[i + 2]?.upper === 'DISTINCT' && tokens[i + 3]?.upper === 'FROM')
        add(t.start, tokens[i + 3]!.end, '=', 'sql_null', span(i, i + 3));
    }

    // Arithmetic and logic in what the query computes.
    // Not the star of `count(*)`: between its parentheses it is no operator, and `count(/)` does not load.
    const star = tokens[i - 1]?.text === '(' && tokens[i + 1]?.text === ')';
    if (
      ARITHMETIC[t.text] &&
      !star &&
      (t.clause === 'select' || t.clause === 'return' || t.clause === 'assign' || t.clause === 'order') &&
      isOperand(tokens, i - 1) &&
      isOperand(tokens, i + 1)
    ) {
      add(t.start, t.end, ARITHMETIC[t.text]!, 'operator', around(i));
      const leftStart = operandStart(tokens, i - 1);
      const rightEnd = operandEnd(tokens, i + 1);
      if ((t.text === '-' || t.text === '/') && leftStart >= 0 && rightEnd >= 0 && src(leftStart, i - 1) !== src(i + 1, rightEnd)) {
        add(
          tokens[leftStart]!.start,
          tokens[rightEnd]!.end,
          `${src(i + 1, rightEnd)} ${t.text} ${src(leftStart, i - 1)}`,
          'operator',
          span(leftStart, rightEnd),
        );
      }
      // `x - 1`, `x + 1`: the adjustment dropped.
      if ((t.text === '-' || t.text === '+') && next?.text === '1' && leftStart >= 0)
        add(tokens[i - 1]!.end, next.end, '', 'off_by_one', span(leftStart, i + 1));
    }
    if (
      (t.upper === 'AND' || t.upper === 'OR') &&
      (t.clause === 'select' || t.clause === 'return' || t.clause === 'assign') &&
      !betweenAnd(tokens, i)
    ) {
      add(t.start, t.end, t.upper === 'AND' ? 'OR' : 'AND', 'operator', conditionSpan(tokens, i, span));
    }
    // CASE WHEN and PL/pgSQL IF conditions inverted.
    if ((t.upper === 'WHEN' || (t.upper === 'IF' && t.clause === 'if')) && t.keywordKind > 0) {
      const then = tokens.findIndex((u, k) => k > i && u.upper === 'THEN' && u.depth === t.depth);
      if (then > i + 1) add(tokens[i + 1]!.start, tokens[then - 1]!.end, `NOT (${src(i + 1, then - 1)})`, 'condition', span(i, then));
    }

    // Rounding and integer division.
    if (t.upper === 'ROUND' && next?.text === '(') {
      const close = matching(tokens, i + 1);
      const firstEnd = argumentEnd(tokens, i + 2);
      if (close > 0 && firstEnd > 0 && tokens[firstEnd + 1]?.text === ',') {
        add(tokens[firstEnd]!.end, tokens[close - 1]!.end, '', 'rounding', span(i, close));
        const digits = tokens[firstEnd + 2];
        if (digits?.tokenName === 'ICONST' && firstEnd + 2 === close - 1)
          add(digits.start, digits.end, String(Number(digits.text) + 1), 'rounding', span(i, close));
      }
      add(t.start, t.end, 'trunc', 'rounding', span(i, close > 0 ? close : i));
    }
    if ((t.upper === 'CEIL' || t.upper === 'CEILING' || t.upper === 'FLOOR') && next?.text === '(')
      add(t.start, t.end, t.upper === 'FLOOR' ? 'ceil' : 'floor', 'rounding', span(i, matching(tokens, i + 1)));
    if (
      t.text === '::' &&
      ['NUMERIC', 'DECIMAL', 'FLOAT', 'FLOAT8', 'REAL'].includes(next?.upper ?? '') &&
      tokens
        .slice(i, i + 6)
        .concat(tokens.slice(Math.max(0, i - 6), i))
        .some((u) => u.text === '/')
    ) {
      // `a::numeric / b` → `a / b`: integer division.
      let end = i + 1;
      if (tokens[end + 1]?.text === '(') end = matching(tokens, end + 1);
      if (end > i && isOperand(tokens, i - 1))
        add(t.start, tokens[end]!.end, '', 'rounding', span(Math.max(0, operandStart(tokens, i - 1)), end));
    }
    if (t.tokenName === 'FCONST' && /^\d+\.0+$/.test(t.text) && (previous?.text === '/' || next?.text === '/'))
      add(t.start, t.end, t.text.replace(/\.0+$/, ''), 'rounding', around(previous?.text === '/' ? i - 1 : i + 1));

    // Limits, offsets and sort order.
    if (t.clause === 'limit' && t.tokenName === 'ICONST') {
      const n = Number(t.text);
      add(t.start, t.end, String(n + 1), 'off_by_one', span(i - 1, i));
      if (n > 1) add(t.start, t.end, String(n - 1), 'off_by_one', span(i - 1, i));
    }
    if (t.clause === 'order' && (t.upper === 'DESC' || t.upper === 'ASC'))
      add(t.start, t.end, t.upper === 'DESC' ? 'ASC' : 'DESC', 'ordering', span(i - 1, i));
    if (
      t.clause === 'order' &&
      t.depth === tokens[i - 1]?.depth &&
      isWord(t) &&
      t.keywordKind !== 4 &&
      t.upper !== 'BY' &&
      !['ASC', 'DESC', 'NULLS', 'FIRST', 'LAST'].includes(t.upper)
    ) {
      const end = operandEnd(tokens, i);
      if (end >= i && !['ASC', 'DESC'].includes(tokens[end + 1]?.upper ?? '') && operandStart(tokens, end) === i)
        add(tokens[end]!.end, tokens[end]!.end, ' DESC', 'ordering', span(i, end));
    }
    if (t.tokenName === 'ICONST' && (t.clause === 'where' || t.clause === 'having') && isComparison(previous)) {
      add(t.start, t.end, String(Number(t.text) + 1), 'off_by_one', around(i - 1));
    }

    // The wrong column: an unqualified or qualified column read where another of its kind fits.
    if (
      (t.clause === 'select' || t.clause === 'return' || t.clause === 'where' || t.clause === 'group' || t.clause === 'having') &&
      isWord(t) &&
      t.keywordKind === 0 &&
      next?.text !== '(' &&
      next?.text !== '.'
    ) {
      const qualifier = previous?.text === '.' ? aliases.get(tokens[i - 2]?.text.toLowerCase() ?? '') : undefined;
      const column = qualifier
        ? schema.tables.get(qualifier)?.find((c) => c.name === t.text.toLowerCase())
        : previous?.text === '.'
          ? undefined
          : columnOf(t.text);
      if (column && column.kind === 'number') {
        const pool = qualifier ? schema.tables.get(qualifier)! : columnsInScope;
        for (const other of pool.filter((c) => c.kind === column.kind && c.name !== column.name && !/^id$|_id$/.test(c.name)).slice(0, 2))
          add(t.start, t.end, other.name, 'variable', span(i, i));
      }
    }
  }
  returnValues(tokens, text, add);
}

/** The last resort: each top-level SELECT's first item or RETURN expression, `+ 1` or negated. */
function returnValues(tokens: Token[], text: string, add: AddEdit): void {
  const BOOLEAN = new Set(['<', '>', '<=', '>=', '=', '<>', '!=', 'AND', 'OR', 'NOT', 'EXISTS', 'IN', 'LIKE', 'TRUE', 'FALSE', 'IS']);
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (!((t.upper === 'SELECT' && t.depth === 0) || (t.upper === 'RETURN' && t.keywordKind > 0))) continue;
    const from = tokens[i + 1]?.upper === 'DISTINCT' ? i + 2 : i + 1;
    let last = from;
    for (; last < tokens.length; last++) {
      const u = tokens[last]!;
      if (
        u.depth < tokens[from]!.depth ||
        (u.depth === tokens[from]?.depth &&
          (u.text === ',' ||
            u.text === ';' ||
            (u.keywordKind > 0 &&
              ['FROM', 'WHERE', 'GROUP', 'ORDER', 'LIMIT', 'HAVING', 'UNION', 'INTO', 'OFFSET', 'WINDOW'].includes(u.upper))))
      )
        break;
    }
    last--;
    if (last < from || !tokens[from]) continue;
    const expression = text.slice(tokens[from]!.start, tokens[last]!.end);
    const booleanLike = tokens.slice(from, last + 1).some((u) => u.depth === tokens[from]!.depth && BOOLEAN.has(u.upper));
    add(tokens[from]!.start, tokens[last]!.end, booleanLike ? `NOT (${expression})` : `(${expression}) + 1`, 'return_value');
  }
}

/** Table name by alias (and by its own name) for the tables the query reads. */
function tableAliases(tokens: Token[], schema: SqlSchema): Map<string, string> {
  const aliases = new Map<string, string>();
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.clause !== 'from' || !isWord(t) || !schema.tables.has(t.text.toLowerCase())) continue;
    const table = t.text.toLowerCase();
    aliases.set(table, table);
    let k = i + 1;
    if (tokens[k]?.upper === 'AS') k++;
    const alias = tokens[k];
    if (alias && alias.tokenName === 'IDENT') aliases.set(alias.text.toLowerCase(), table);
  }
  return aliases;
}

/** A SELECT with a FROM and no aggregate in its list: DISTINCT added can change its rows. */
function rowsCanRepeat(tokens: Token[], i: number): boolean {
  const depth = tokens[i]!.depth;
  for (let k = i + 1; k < tokens.length && tokens[k]!.depth >= depth; k++) {
    const u = tokens[k]!;
    if (u.depth === depth && u.clause === 'from') return true;
    if (u.depth === depth && AGGREGATES[u.upper] && tokens[k + 1]?.text === '(') return false;
  }
  return false;
}

const isComparison = (t: Token | undefined) => t !== undefined && ['=', '<>', '!=', '<', '<=', '>', '>='].includes(t.text);
const isOperand = (tokens: Token[], i: number) => {
  const t = tokens[i];
  return t !== undefined && (isLiteral(t) || (isWord(t) && t.keywordKind !== 4) || t.text === ')' || t.text === '(');
};

/** `BETWEEN a AND b`: that AND is part of the range. */
function betweenAnd(tokens: Token[], i: number): boolean {
  for (let k = i - 1; k >= 0 && k >= i - 8; k--) {
    if (tokens[k]!.depth !== tokens[i]!.depth) continue;
    if (tokens[k]!.upper === 'BETWEEN') return true;
    if (
      tokens[k]!.upper === 'AND' ||
      tokens[k]!.upper === 'OR' ||
      (tokens[k]!.keywordKind === 4 && tokens[k]!.upper !== 'NOT' && tokens[k]!.upper !== 'NULL')
    )
      return false;
  }
  return false;
}

/** The first token of the condition left of a boolean operator at `i` (same depth, back to a clause keyword or another AND/OR). */
function operandRunStart(tokens: Token[], i: number): number {
  const depth = tokens[i]!.depth;
  let k = i - 1;
  for (; k >= 0; k--) {
    const u = tokens[k]!;
    if (
      u.depth < depth ||
      (u.depth === depth &&
        (u.upper === 'AND' ||
          u.upper === 'OR' ||
          u.upper === 'WHERE' ||
          u.upper === 'ON' ||
          u.upper === 'HAVING' ||
          u.upper === 'IF' ||
          u.upper === 'WHEN'))
    )
      break;
  }
  return k + 1 < i ? k + 1 : -1;
}

function operandRunEnd(tokens: Token[], i: number): number {
  const depth = tokens[i]!.depth;
  let k = i + 1;
  for (; k < tokens.length; k++) {
    const u = tokens[k]!;
    if (
      u.depth < depth ||
      (u.depth === depth &&
        (u.upper === 'AND' ||
          u.upper === 'OR' ||
          u.text === ';' ||
          (u.keywordKind > 0 &&
            [
              'GROUP',
              'ORDER',
              'LIMIT',
              'HAVING',
              'THEN',
              'JOIN',
              'LEFT',
              'INNER',
              'RIGHT',
              'UNION',
              'WINDOW',
              'OFFSET',
              'WHERE',
              'RETURNING',
              'LOOP',
              'FULL',
              'CROSS',
            ].includes(u.upper))))
    )
      break;
  }
  return k - 1;
}

function conditionSpan(tokens: Token[], i: number, span: (i: number, j: number) => [number, number]): [number, number] {
  const from = operandRunStart(tokens, i);
  const to = operandRunEnd(tokens, i);
  return span(from >= 0 ? from : i, to > i ? to : i);
}

/** The last token of a WHERE clause starting at `i`. */
function clauseEnd(tokens: Token[], i: number): number {
  const depth = tokens[i]!.depth;
  let k = i + 1;
  for (; k < tokens.length; k++) {
    const u = tokens[k]!;
    if (
      u.depth < depth ||
      (u.depth === depth &&
        (u.text === ';' ||
          (u.keywordKind > 0 && ['GROUP', 'ORDER', 'LIMIT', 'HAVING', 'UNION', 'WINDOW', 'OFFSET', 'RETURNING', 'INTO'].includes(u.upper))))
    )
      break;
  }
  return k - 1;
}

/** The last token of a call argument starting at `i` (up to a comma or the closing parenthesis). */
function argumentEnd(tokens: Token[], i: number): number {
  const depth = tokens[i]?.depth;
  let k = i;
  for (; k < tokens.length; k++) {
    const u = tokens[k]!;
    if (u.depth < depth! || (u.depth === depth && u.text === ',')) break;
  }
  return k - 1;
}
