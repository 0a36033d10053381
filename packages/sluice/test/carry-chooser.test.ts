// Whether claims carry completions: one window each way, the faster kept, the other tried
// again (src/worker/carry-chooser.ts). A clock of the test's own: no time passes for real.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CarryChooser } from '../src/worker/carry-chooser.js';

/** A chooser on a clock the test moves, and a way to run one window at a given rate. */
function chooser(keepWindows = 3) {
  let now = 0;
  const carry = new CarryChooser({ clock: () => now, windowMs: 100, keepWindows });
  const modes: string[] = [];
  /** A window of 100 ms in which `jobs` ended; then the claim that closes it. */
  const window = (jobs: number) => {
    modes.push(carry.carries() ? 'carried' : 'beside');
    for (let i = 0; i < jobs; i++) carry.ended();
    now += 100;
  };
  const next = () => (carry.carries() ? 'carried' : 'beside');
  // The first window in which jobs end pays for the start: not counted.
  window(1);
  modes.length = 0;
  return { carry, modes, window, next };
}

test('one window each way, then the faster is kept for its windows, and the other is tried again', () => {
  const c = chooser(3);
  c.window(100); // beside: 1 job/ms
  c.window(300); // carried: 3 jobs/ms, the faster
  c.window(300);
  c.window(300);
  c.window(300); // kept three windows
  c.window(100); // beside tried again: still slower
  c.window(300);
  assert.deepEqual(c.modes, ['beside', 'carried', 'carried', 'carried', 'carried', 'beside', 'carried']);
  assert.deepEqual(c.carry.jobsPerSecond, { beside: 1000, carried: 3000 });
});

test('a try that beats the kept mode takes over', () => {
  const c = chooser(2);
  c.window(300); // beside
  c.window(100); // carried: slower, beside kept
  c.window(300);
  c.window(300);
  c.window(50); // carried tried again: slower still
  c.window(300);
  c.window(300);
  c.window(500); // carried tried again: now the faster
  assert.equal(c.next(), 'carried');
  assert.deepEqual(c.modes, ['beside', 'carried', 'beside', 'beside', 'carried', 'beside', 'beside', 'carried']);
});

test('a window in which no job ended is not counted: an idle worker keeps its mode and its phase', () => {
  const c = chooser(2);
  c.window(100); // beside
  c.window(0); // carried, but idle: not measured
  c.window(0);
  assert.equal(c.next(), 'carried', 'still trying carried');
  assert.ok(Number.isNaN(c.carry.jobsPerSecond.carried));
  c.window(200); // carried measured at last
  assert.equal(c.next(), 'carried');
  assert.deepEqual(c.carry.jobsPerSecond, { beside: 1000, carried: 2000 });
});

test('a kept mode follows its own rate as it goes (a running average), a tried one is measured afresh', () => {
  const c = chooser(2);
  c.window(100); // beside: 1 job/ms
  c.window(200); // carried: 2 jobs/ms, kept
  c.window(100); // carried slows to 1 job/ms
  assert.equal(c.next(), 'carried', 'the claim that closes the window');
  assert.ok(Math.abs(c.carry.jobsPerSecond.carried - 1700) < 1e-6, String(c.carry.jobsPerSecond.carried));
  c.window(100); // last kept window: 1.49 jobs/ms
  c.window(150); // beside tried afresh: 1.5 jobs/ms beats carried's running 1.49
  assert.equal(c.next(), 'beside');
});

test("the first window in which jobs end is not counted: it pays for the worker's start", () => {
  let now = 0;
  const carry = new CarryChooser({ clock: () => now, windowMs: 100, keepWindows: 2 });
  const window = (jobs: number) => {
    const mode = carry.carries() ? 'carried' : 'beside';
    for (let i = 0; i < jobs; i++) carry.ended();
    now += 100;
    return mode;
  };
  assert.equal(window(0), 'beside');
  assert.equal(window(10), 'beside', 'idle before: this is the first window with jobs');
  assert.equal(window(100), 'beside', 'the start not counted: beside is still to be tried');
  assert.equal(window(50), 'carried');
  assert.equal(carry.carries(), false, 'beside kept: 1 job/ms against 0.5');
  assert.deepEqual(carry.jobsPerSecond, { beside: 1000, carried: 500 });
});
