// The candidate's page. The token in the page's address is the candidate's identity: every
// call to the API carries it as a bearer token. The page asks for the candidate's mission
// (served from the warm pool, or queued: then it follows the request and shows its place
// in the queue), shows the brief (HTML rendered from Markdown by the server, raw HTML
// escaped), the files in CodeMirror editors and the tests read-only, submits, and reads the
// grade from the submission's event stream. Bundled by scripts/build-page.mjs.
import { EditorView, basicSetup } from 'codemirror';
import { python } from '@codemirror/lang-python';
import { javascript } from '@codemirror/lang-javascript';
import { sql } from '@codemirror/lang-sql';

const token = decodeURIComponent(location.pathname.split('/').filter(Boolean).pop() ?? '');
const $ = (id) => document.getElementById(id);
/** Seconds between looks at a queued request; a reviewed mission is looked at less often. */
const FOLLOW_MS = 1500;
const AWAIT_REVIEW_MS = 5000;

const THEME = EditorView.theme({
  '&': { fontSize: '14px', maxHeight: '60vh' },
  '.cm-scroller': { overflow: 'auto', fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace' },
  '&.cm-focused': { outline: '2px solid #1f5fbf', outlineOffset: '-2px' },
});

let instance = null;
const editors = new Map();

async function api(method, path, body) {
  const headers = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await res.json().catch(() => null);
  return { status: res.status, data, retryAfter: Number(res.headers.get('retry-after')) || null };
}

function setState(status, text, action) {
  const state = $('state');
  state.dataset.status = status;
  state.className = ['limit', 'shed', 'refused', 'failed'].includes(status) ? 'refused' : '';
  state.replaceChildren();
  for (const line of [].concat(text)) {
    const p = document.createElement('p');
    p.textContent = line;
    state.append(p);
  }
  if (action) {
    const button = document.createElement('button');
    button.type = 'button';
    button.textContent = action.label;
    button.addEventListener('click', action.run);
    state.append(button);
    button.focus();
  }
}

const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** An answer other than the mission: an honest page for each refusal. */
function refused(answer, retry) {
  const message = answer.data?.message ?? `the platform answered ${answer.status}`;
  const after = answer.retryAfter ? ` Try again in about ${answer.retryAfter} s.` : '';
  if (answer.status === 429) {
    setState(
      'limit',
      [
        'You are at your limit: 429.',
        `You already have as many mission requests in progress as one candidate may (${message}). They keep being prepared; this is not an error on your side.${after}`,
      ],
      { label: 'Try again', run: retry },
    );
  } else if (answer.status === 503) {
    setState(
      'shed',
      [
        'The platform is at capacity right now: 503.',
        `Many candidates are asking at once, so new requests are turned away for a moment rather than left waiting without an answer.${after}`,
      ],
      { label: 'Try again', run: retry },
    );
  } else if (answer.status === 401) {
    setState('refused', ['This invitation link cannot be used.', `${message}. Ask the recruiter who invited you for a new link.`]);
  } else if (answer.status === 403) {
    setState('refused', ['This belongs to another candidate.', message]);
  } else {
    setState('failed', ['Something went wrong.', message], { label: 'Try again', run: retry });
  }
}

async function start() {
  const view = await api('GET', '/api/candidate');
  if (view.status !== 200) return refused(view, start);
  $('who').textContent =
    `${view.data.candidate.name} · ${view.data.candidate.role} · link valid until ${new Date(view.data.candidate.expiresAt).toLocaleString()}`;
  if (view.data.instance) return show(view.data);
  return requestMission();
}

async function requestMission() {
  setState('loading', 'Asking for your mission…');
  const answer = await api('POST', '/api/candidate/mission');
  if (answer.status === 200) return show((await api('GET', '/api/candidate')).data);
  if (answer.status === 202) return follow(answer.data.jobId, answer.data.position);
  return refused(answer, requestMission);
}

function queuedText(position) {
  return position === null || position === undefined ? 'it is being worked on now' : `position ${position} in the queue`;
}

/** Follows a queued request until its mission can be served, then asks for it again. */
async function follow(jobId, position) {
  setState('queued', ['Your mission is being prepared.', `Generating a challenge for you: ${queuedText(position)}.`]);
  for (;;) {
    const answer = await api('GET', `/api/candidate/requests/${jobId}`);
    if (answer.status !== 200) return refused(answer, () => follow(jobId, null));
    const p = answer.data;
    if (p.state === 'generating')
      setState('queued', ['Your mission is being prepared.', `Generating a challenge for you: ${queuedText(p.position)}.`]);
    else if (p.state === 'proving')
      setState('queued', ['Your mission is being prepared.', `Planting a bug and proving the tests catch it: ${queuedText(p.position)}.`]);
    else if (p.state === 'failed')
      return setState('failed', ['Preparing your mission failed.', p.error], { label: 'Ask again', run: requestMission });
    else if (p.state === 'proven' && p.qaStatus === 'pending') {
      setState('queued', ['Your mission is ready and waiting for a reviewer.', 'This page updates by itself once it is approved.']);
      await wait(AWAIT_REVIEW_MS);
      continue;
    } else if (p.state === 'proven') return requestMission();
    await wait(FOLLOW_MS);
  }
}

function language(path) {
  if (path.endsWith('.py')) return [python()];
  if (/\.(m|c)?[jt]sx?$/.test(path)) return [javascript({ typescript: /\.(m|c)?tsx?$/.test(path) })];
  if (path.endsWith('.sql')) return [sql()];
  return [];
}

function fileBlock(path, text, { editable, toFix }) {
  const block = document.createElement('section');
  block.className = 'file';
  const heading = document.createElement('h3');
  heading.id = `file-${editable ? 'code' : 'test'}-${path.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  heading.textContent = path;
  const tag = document.createElement('span');
  tag.className = 'tag';
  tag.textContent = editable ? (toFix ? 'the file to fix' : 'editable') : 'read only';
  heading.append(tag);
  const holder = document.createElement('div');
  holder.dataset.path = path;
  if (toFix) holder.dataset.testid = 'editor';
  block.append(heading, holder);
  // In a shadow root CodeMirror's styles are constructed style sheets, which the page's
  // Content-Security-Policy (style-src 'self', no inline <style>) allows.
  const root = holder.attachShadow({ mode: 'open' });
  const view = new EditorView({
    doc: text,
    parent: root,
    root,
    extensions: [
      basicSetup,
      ...language(path),
      THEME,
      EditorView.contentAttributes.of({ 'aria-label': `${path}${editable ? '' : ' (read only)'}` }),
      ...(editable ? [] : [EditorView.editable.of(false)]),
    ],
  });
  return { block, view };
}

function show(view) {
  instance = view.instance;
  $('title').textContent = instance.title;
  document.title = `${instance.title} · your mission`;
  $('brief').innerHTML = instance.briefHtml; // rendered by the server with raw HTML escaped
  const files = $('files');
  files.replaceChildren();
  editors.clear();
  const paths = Object.keys(instance.files).sort(
    (a, b) => Number(instance.filesToFix.includes(b)) - Number(instance.filesToFix.includes(a)),
  );
  const toFix = instance.filesToFix.find((p) => p in instance.files) ?? paths[0];
  for (const path of paths) {
    const { block, view: editor } = fileBlock(path, instance.files[path], { editable: true, toFix: path === toFix });
    files.append(block);
    editors.set(path, editor);
  }
  const tests = $('tests');
  tests.replaceChildren();
  for (const path of Object.keys(instance.tests).sort())
    tests.append(fileBlock(path, instance.tests[path], { editable: false, toFix: false }).block);
  setState('ready', '');
  $('state').replaceChildren();
  $('mission').hidden = false;
  showProgress(view);
  const last = view.submissions.at(-1);
  if (last?.status === 'queued') awaitGrade(last.id);
  else if (last) showGrade(last);
}

function showProgress(view) {
  const failed = view.failedSubmissions;
  $('attempts').textContent = view.submissions.length === 0 ? '' : `${view.submissions.length} submission(s), ${failed} failed.`;
  const hint = $('hint');
  if (view.hint) {
    hint.hidden = false;
    hint.replaceChildren(Object.assign(document.createElement('strong'), { textContent: 'Hint: ' }), document.createTextNode(view.hint));
  } else {
    hint.hidden = true;
  }
}

async function submit() {
  const button = $('submit');
  button.disabled = true;
  $('submit-note').textContent = 'Submitting…';
  const files = Object.fromEntries([...editors].map(([path, editor]) => [path, editor.state.doc.toString()]));
  const answer = await api('POST', `/api/instances/${instance.id}/submissions`, { files });
  if (answer.status !== 202) {
    button.disabled = false;
    $('submit-note').textContent = '';
    $('grade').className = 'error';
    $('grade').textContent =
      answer.status === 429
        ? `Not submitted: you have as many submissions being graded as one candidate may (429).${answer.retryAfter ? ` Try again in about ${answer.retryAfter} s.` : ''}`
        : answer.status === 503
          ? 'Not submitted: grading is at capacity right now (503). Try again in a moment.'
          : `Not submitted: ${answer.data?.message ?? answer.status}`;
    return;
  }
  await awaitGrade(answer.data.id);
}

/** Reads the submission's event stream (fetch, so the token goes in a header) until it is graded. */
async function awaitGrade(submissionId) {
  $('submit').disabled = true;
  $('submit-note').textContent = '';
  $('grade').className = 'queued';
  $('grade').textContent = 'Grading… the tests are running on your code.';
  $('grade-tests').replaceChildren();
  try {
    const res = await fetch(`/api/submissions/${submissionId}/events`, {
      headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
    });
    if (!res.ok || !res.body) throw new Error(`the grade stream answered ${res.status}`);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (event === 'submission' && data) {
          const submission = JSON.parse(data);
          if (submission.status !== 'queued') showGrade(submission);
        } else if (event === 'error' && data) {
          throw new Error(JSON.parse(data).message);
        }
      }
    }
  } catch (error) {
    $('grade').className = 'error';
    $('grade').textContent = `The grade could not be read: ${error.message}. Reload the page to see it.`;
  } finally {
    $('submit').disabled = false;
  }
  const view = await api('GET', '/api/candidate');
  if (view.status === 200) showProgress(view.data);
}

function showGrade(submission) {
  const grade = $('grade');
  const result = submission.result;
  grade.className = submission.status;
  if (submission.status === 'error') {
    grade.textContent = `error: your code could not be graded (${submission.error}). Submit again.`;
  } else {
    grade.textContent = `${submission.status}: ${result.testsPassed} of ${result.testsRun} tests pass${result.setupError ? ` · ${result.setupError}` : ''}`;
  }
  const list = $('grade-tests');
  list.replaceChildren();
  for (const t of result?.tests ?? []) {
    const item = document.createElement('li');
    const name = Object.assign(document.createElement('span'), { className: 'name', textContent: t.id });
    const status = Object.assign(document.createElement('span'), { className: t.status, textContent: ` ${t.status}` });
    item.append(name, status);
    if (t.message) item.append(Object.assign(document.createElement('pre'), { textContent: t.message }));
    list.append(item);
  }
}

document.addEventListener('DOMContentLoaded', () => {
  $('submit').addEventListener('click', () => void submit());
  void start().catch((error) => setState('failed', ['Something went wrong.', error.message], { label: 'Try again', run: start }));
});
