// tables.ts: the report as tables (header and rows of cells), which the
// terminal and the HTML report both render.
import type { BenchReport } from './report.js';

export interface Table {
  title: string;
  header: string[];
  rows: string[][];
}

const us = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
const ratio = (x: number | null) => (x === null ? '-' : `${x.toFixed(x < 2 ? 2 : 1)}x`);
const perSecond = (x: number | null) => (x === null ? '-' : x.toFixed(0));

export function samplerTable(report: BenchReport): Table {
  const backends = [...new Set(report.sampler.map((r) => r.backend))];
  const withSpeedup = backends.filter(
    (b) => b !== 'js' && b !== 'llama.cpp' && report.sampler.some((r) => r.backend === b && r.speedupOverJs !== null),
  );
  // llama.cpp's time over native's, both from this run.
  const versusLlama = backends.includes('llama.cpp') && backends.includes('native');
  const cells = [...new Map(report.sampler.map((r) => [`${r.vocab} ${r.config}`, r])).values()];
  return {
    title: `sampler: us per sample() call, median (p90), ${report.settings.shape} rows of float16 logits`,
    header: ['V', 'config', ...backends, ...withSpeedup.map((b) => `${b} vs js`), ...(versusLlama ? ['native vs llama.cpp'] : [])],
    rows: cells.map(({ vocab, config }) => {
      const of = (b: string) => report.sampler.find((r) => r.vocab === vocab && r.config === config && r.backend === b)!;
      return [
        String(vocab),
        config,
        ...backends.map((b) => `${us(of(b).medianUs)} (${us(of(b).p90Us)})`),
        ...withSpeedup.map((b) => ratio(of(b).speedupOverJs)),
        ...(versusLlama ? [ratio(of('llama.cpp').medianUs / of('native').medianUs)] : []),
      ];
    }),
  };
}

export function decodeTable(report: BenchReport): Table {
  const { vocab, dim, tokens, chunkSize } = report.settings.decode;
  return {
    title: `decode: tokens/s of the bigram model (V=${vocab}, d=${dim}) through generate(), ${tokens} tokens, median`,
    header: ['backend', 'mode', `chained (${chunkSize} per submission)`, 'one per submission', 'chained / one'],
    rows: report.decode.map((r) => [
      r.backend,
      r.mode,
      perSecond(r.chainedTokensPerSecond),
      perSecond(r.onePerSubmissionTokensPerSecond),
      ratio(r.chainedOverOne),
    ]),
  };
}

export function speculativeTable(report: BenchReport): Table {
  const { tokens } = report.settings.decode;
  return {
    title: `speculative decode: tokens/s through generate() with n-gram speculation (exact: the same tokens) against without, ${tokens} tokens, median`,
    header: ['backend', 'mode', 'text', 'without', 'with', 'with / without', 'passes per token', 'drafts kept'],
    rows: (report.speculative ?? []).map((r) => [
      r.backend,
      r.mode,
      r.text,
      perSecond(r.plainTokensPerSecond),
      perSecond(r.speculativeTokensPerSecond),
      ratio(r.speculativeOverPlain),
      r.forwardPassesPerToken.toFixed(2),
      `${(100 * r.acceptanceRate).toFixed(0)}%`,
    ]),
  };
}

/** The tables of the scenarios that ran. */
export function reportTables(report: BenchReport): Table[] {
  return [
    ...(report.sampler.length > 0 ? [samplerTable(report)] : []),
    ...(report.decode.length > 0 ? [decodeTable(report)] : []),
    ...((report.speculative ?? []).length > 0 ? [speculativeTable(report)] : []),
  ];
}

/** A table as aligned text for a terminal. */
export function tableText(table: Table): string {
  const all = [table.header, ...table.rows];
  const widths = table.header.map((_, c) => Math.max(...all.map((r) => r[c].length)));
  const line = (r: string[]) => r.map((cell, c) => (c < 2 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ');
  return [table.title, line(table.header), widths.map((w) => '-'.repeat(w)).join('  '), ...table.rows.map(line)].join('\n');
}
