/**
 * A semantics-preserving rewrite of SQL gold, made with libpg-query's scanner (the real
 * PostgreSQL lexer): the spaces between tokens doubled, in function bodies too (the
 * dollar-quoted code of a CREATE FUNCTION, PROCEDURE or DO statement, never a dollar-quoted
 * value), and a comment line added.
 * Names are kept (a call may name its arguments) and statements keep their order (a
 * `LANGUAGE sql` body is checked against what exists when it is created).
 */
import { scanSync, type ScanToken } from 'libpg-query';
import { loadSqlParser } from '../runners/sql-script.js';
import { splice, type Splice } from './splice.js';

export async function rewriteSql(text: string): Promise<string | null> {
  await loadSqlParser();
  const bytes = Buffer.from(text, 'utf8');
  const edits: Splice[] = [];
  const region = (from: number, to: number): boolean => {
    let tokens: ScanToken[];
    try {
      tokens = scanSync(bytes.subarray(from, to).toString('utf8')).tokens;
    } catch {
      return false;
    }
    // The statement's words so far, comments left out: what decides whether a string is code.
    let statement: string[] = [];
    for (let i = 0; i < tokens.length; i++) {
      const token = tokens[i]!;
      const word = token.text.toUpperCase();
      const body = token.tokenName === 'SCONST' && isRoutineBody(statement);
      if (word === ';') statement = [];
      else if (!COMMENTS.has(token.tokenName)) statement.push(word);
      const next = tokens[i + 1];
      // Spaces only: a newline may end a `--` comment.
      if (next && next.start > token.end && /^[ \t]+$/.test(bytes.subarray(from + token.end, from + next.start).toString('utf8'))) {
        edits.push({ start: from + token.end, end: from + token.end, text: ' ' });
      }
      const dollar = /^\$([A-Za-z_]*)\$/.exec(token.text);
      if (body && dollar) region(from + token.start + dollar[0].length, from + token.end - dollar[0].length);
    }
    return true;
  };
  if (!region(0, bytes.length)) return null;
  // Splices are in bytes: apply them to the bytes, then decode.
  const spliced = Buffer.from(splice(bytes.toString('latin1'), edits), 'latin1').toString('utf8');
  return `-- an equivalent rewrite of the solution\n${spliced}`;
}

const COMMENTS = new Set(['SQL_COMMENT', 'C_COMMENT']);
const ROUTINES = new Set(['FUNCTION', 'PROCEDURE']);

/**
 * Whether the string that follows these words is a routine's code: the `AS` string of a
 * `CREATE [OR REPLACE] FUNCTION | PROCEDURE`, the string of a `DO`. Never a value: not
 * `ON CONFLICT … DO UPDATE SET x = $$…$$`, not `COMMENT ON FUNCTION f() IS $$…$$`, not a
 * parameter's default.
 */
function isRoutineBody(statement: string[]): boolean {
  if (statement[0] === 'DO') return true;
  const routine = statement[1] === 'OR' && statement[2] === 'REPLACE' ? statement[3] : statement[1];
  return statement[0] === 'CREATE' && ROUTINES.has(routine ?? '') && statement.at(-1) === 'AS';
}
