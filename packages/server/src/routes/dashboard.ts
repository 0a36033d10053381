/**
 * The admin dashboard: static HTML, JS and CSS from ../../public (ES modules, no build
 * step) and the chart library (uPlot) from node_modules. The files hold no data; the page
 * asks for the admin token and calls the admin API with it.
 *
 * The files are read once at start and each gets its own fixed route: no path from a
 * request ever reaches the file system, so nothing outside these files can be served.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';

const PUBLIC_DIR = fileURLToPath(new URL('../../public/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/** Files of the chart library, served under /vendor/ by the names the modules import. */
const VENDOR: Record<string, string> = {
  'uplot.esm.js': 'uplot/dist/uPlot.esm.js',
  'uplot.css': 'uplot/dist/uPlot.min.css',
};

/** Every file under `dir` whose type is served, as URL paths (forward slashes) → absolute paths. */
function publicFiles(dir: string, prefix = '/', files = new Map<string, string>()): Map<string, string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) publicFiles(path, `${prefix}${entry.name}/`, files);
    else if (entry.isFile() && TYPES[extname(entry.name)]) files.set(`${prefix}${entry.name}`, path);
  }
  return files;
}

/** The dashboard's files: URL path → file (the public directory's, then the chart library's). */
export function dashboardFiles(): Map<string, string> {
  const require = createRequire(import.meta.url);
  const files = publicFiles(PUBLIC_DIR);
  for (const [name, specifier] of Object.entries(VENDOR)) files.set(`/vendor/${name}`, require.resolve(specifier));
  return files;
}

export function dashboardRoutes(app: FastifyInstance): void {
  const files = dashboardFiles();
  const route = (url: string, path: string) => {
    const body = readFileSync(path);
    const type = TYPES[extname(path)]!;
    app.get(url, { schema: { hide: true } }, async (_request: unknown, reply: FastifyReply) =>
      reply.type(type).header('cache-control', 'no-cache').send(body),
    );
  };
  for (const [url, path] of files) route(url, path);
  route('/', files.get('/index.html')!);
}
