/** The equivalent rewrite of a gold solution for its language, or null when nothing could be rewritten. */
import type { Language, SourceFiles } from '../types.js';
import { rewriteJavaScript } from './rewrite-javascript.js';
import { namesInCode, rewritePython } from './rewrite-python.js';
import { rewriteSql } from './rewrite-sql.js';

export const REWRITE_DESCRIPTION: Record<Language, string> = {
  python: 'local names and parameters renamed, top-level functions reordered, indentation doubled',
  javascript: 'local names and parameters renamed, top-level functions reordered, reprinted with indentation doubled',
  typescript: 'local names and parameters renamed, top-level functions reordered, reprinted with indentation doubled',
  sql: 'spacing between tokens changed, in function bodies too',
};

export async function equivalentGold(language: Language, gold: SourceFiles, tests: SourceFiles): Promise<SourceFiles | null> {
  // A parameter a test's code names may be passed by keyword: it keeps its name.
  const testNames =
    language === 'python'
      ? await namesInCode(
          Object.entries(tests)
            .filter(([path]) => path.endsWith('.py'))
            .map(([, text]) => text),
        )
      : new Set<string>();
  const rewritten: SourceFiles = {};
  let changed = false;
  for (const [path, text] of Object.entries(gold)) {
    let next: string | null = null;
    if (language === 'python' && path.endsWith('.py')) next = await rewritePython(text, testNames);
    else if (language === 'sql' && path.endsWith('.sql')) next = await rewriteSql(text);
    else if ((language === 'javascript' || language === 'typescript') && /\.[cm]?[jt]sx?$/.test(path)) next = rewriteJavaScript(path, text);
    rewritten[path] = next ?? text;
    changed ||= next !== null && next !== text;
  }
  return changed ? rewritten : null;
}
