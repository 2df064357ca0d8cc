// event-loop-probe.ts: how long work holds the event loop, measured so that
// a loaded machine does not change the answer.
//
// A timer's wall-clock gap mixes two things: the time this thread computed
// without letting the loop turn (what the tests promise to bound), and the
// time the operating system gave the core to another process (the weather:
// on a 2-core machine with two busy processes beside it, a runnable thread
// waits tens of milliseconds now and then). On Linux the kernel counts the
// first alone: /proc/thread-self/schedstat's first field is the nanoseconds
// this thread has run on a CPU. The probe reads it at every tick, so a gap's
// "hold" is the CPU time the main thread spent between two turns of the
// loop. Where that file does not exist (macOS), the hold is the wall gap.
import { readFileSync } from 'node:fs';

const SCHEDSTAT = '/proc/thread-self/schedstat';

function threadCpuMs(): number | undefined {
  try {
    return Number(readFileSync(SCHEDSTAT, 'latin1').split(' ')[0]) / 1e6;
  } catch {
    return undefined;
  }
}

export interface EventLoopReport {
  /** How many times the timer fired. */
  ticks: number;
  /** The longest the loop was held between two turns (or before the first): thread CPU ms on Linux, wall ms elsewhere. */
  longestHoldMs: number;
  /** What longestHoldMs counts. */
  measures: 'thread CPU time' | 'wall time';
  /** The longest wall-clock gap, load included: for messages, not for bounds. */
  longestWallGapMs: number;
}

/**
 * Starts a timer every `intervalMs` on this thread; `stop()` reports the
 * longest hold. `onTick` runs after each tick is recorded, with the report
 * so far (a test can abort its work once the probe has seen enough).
 */
export function watchEventLoop(options: { intervalMs?: number; onTick?: (report: EventLoopReport) => void } = {}): { stop(): EventLoopReport } {
  const cpuAtStart = threadCpuMs();
  const measures = cpuAtStart === undefined ? 'wall time' : 'thread CPU time';
  let lastWall = performance.now();
  let lastCpu = cpuAtStart;
  const report: EventLoopReport = { ticks: 0, longestHoldMs: 0, measures, longestWallGapMs: 0 };
  const record = () => {
    const wall = performance.now();
    const cpu = lastCpu === undefined ? undefined : threadCpuMs();
    const wallGap = wall - lastWall;
    report.longestWallGapMs = Math.max(report.longestWallGapMs, wallGap);
    report.longestHoldMs = Math.max(report.longestHoldMs, cpu === undefined || lastCpu === undefined ? wallGap : cpu - lastCpu);
    lastWall = wall;
    lastCpu = cpu;
  };
  const timer = setInterval(() => {
    record();
    report.ticks++;
    options.onTick?.(report);
  }, options.intervalMs ?? 2);
  return {
    stop() {
      clearInterval(timer);
      record(); // the stretch after the last tick counts too
      return { ...report };
    },
  };
}

/** A message for a failed bound: what was measured. */
export function describeHold(report: EventLoopReport): string {
  return `the loop was held ${report.longestHoldMs.toFixed(1)} ms (${report.measures}; longest wall gap ${report.longestWallGapMs.toFixed(1)} ms, ${report.ticks} ticks)`;
}
