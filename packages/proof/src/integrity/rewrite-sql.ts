/**
 * A semantics-preserving rewrite of SQL gold, made with libpg-query's scanner (the real
 * PostgreSQL lexer): the spaces between tokens doubled, in function bodies too (the
 * dollar-quoted code of a CREATE FUNCTION, PROCEDURE or DO), and a comment line added.
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
    let routine = false;
    for (let i = 0; i < tokens.length; i++) {
      const token = tokens[i]!;
      const word = token.text.toUpperCase();
      if (word === 'FUNCTION' || word === 'PROCEDURE' || word === 'DO') routine = true;
      if (word === ';') routine = false;
      const next = tokens[i + 1];
      // Spaces only: a newline may end a `--` comment.
      if (next && next.start > token.end && /^[ \t]+$/.test(bytes.subarray(from + token.end, from + next.start).toString('utf8'))) {
        edits.push({ start: from + token.end, end: from + token.end, text: ' ' });
      }
      const dollar = /^\$([A-Za-z_]*)\$/.exec(token.text);
      if (routine && token.tokenName === 'SCONST' && dollar) region(from + token.start + dollar[0].length, from + token.end - dollar[0].length);
    }
    return true;
  };
  if (!region(0, bytes.length)) return null;
  // Splices are in bytes: apply them to the bytes, then decode.
  const spliced = Buffer.from(splice(bytes.toString('latin1'), edits), 'latin1').toString('utf8');
  return `-- an equivalent rewrite of the solution\n${spliced}`;
}
