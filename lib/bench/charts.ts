// charts.ts: the report as an SVG bar chart (and an HTML page holding it
// with the tables). Written by hand: a few rectangles and labels do not
// need a charting library.
import { describeMachine } from './machine.js';
import type { BenchReport } from './report.js';
import { reportTables, type Table } from './tables.js';

const COLORS: Record<string, string> = { metal: '#d9480f', emulated: '#7048e8', native: '#1971c2', js: '#2f9e44' };
const WIDTH = 900;
const LABEL = 230;   // the width of the group labels on the left
const BAR = 14;

const xml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

interface Group {
  label: string;
  bars: { series: string; value: number; text: string }[];
}

// Horizontal bars, one group per row label, one bar per series; `log`
// scales widths by log10 (sampler times span three decades).
function barChart(title: string, groups: Group[], log: boolean, top: number): { svg: string; height: number } {
  const values = groups.flatMap((g) => g.bars.map((b) => b.value)).filter((v) => v > 0);
  const max = Math.max(...values);
  const min = Math.min(...values);
  const span = WIDTH - LABEL - 90;
  const width = (v: number) => {
    if (v <= 0) return 0;
    if (!log) return (v / max) * span;
    const low = Math.log10(min) - 0.3;
    return ((Math.log10(v) - low) / (Math.log10(max) - low)) * span;
  };
  const parts = [`<text x="0" y="${top + 14}" font-weight="bold">${xml(title)}</text>`];
  let y = top + 28;
  for (const group of groups) {
    parts.push(`<text x="${LABEL - 8}" y="${y + 11}" text-anchor="end">${xml(group.label)}</text>`);
    for (const bar of group.bars) {
      const w = width(bar.value);
      parts.push(
        `<rect x="${LABEL}" y="${y}" width="${w.toFixed(1)}" height="${BAR - 2}" fill="${COLORS[bar.series] ?? '#868e96'}"><title>${xml(`${bar.series}: ${bar.text}`)}</title></rect>`,
        `<text x="${(LABEL + w + 4).toFixed(1)}" y="${y + 10}" font-size="10">${xml(`${bar.series} ${bar.text}`)}</text>`,
      );
      y += BAR;
    }
    y += 6;
  }
  return { svg: parts.join('\n'), height: y - top };
}

/** The report's charts as one SVG document. */
export function reportSvg(report: BenchReport): string {
  const charts: { svg: string; height: number }[] = [];
  let top = 40;
  if (report.sampler.length > 0) {
    const groups = [...new Map(report.sampler.map((r) => [`V=${r.vocab} ${r.config}`, r])).keys()].map((label) => ({
      label,
      bars: report.sampler.filter((r) => `V=${r.vocab} ${r.config}` === label).map((r) => ({
        series: r.backend, value: r.medianUs, text: `${r.medianUs.toFixed(1)} us`,
      })),
    }));
    charts.push(barChart('sampler: median us per token (log scale, shorter is faster)', groups, true, top));
    top += charts[charts.length - 1].height + 20;
  }
  if (report.decode.length > 0) {
    const groups = report.decode.map((r) => ({
      label: `${r.backend} ${r.mode}`,
      bars: [
        ...(r.chainedTokensPerSecond === null ? [] : [{ series: r.backend, value: r.chainedTokensPerSecond, text: `${r.chainedTokensPerSecond.toFixed(0)} tok/s chained` }]),
        { series: r.backend, value: r.onePerSubmissionTokensPerSecond, text: `${r.onePerSubmissionTokensPerSecond.toFixed(0)} tok/s one per submission` },
      ],
    }));
    charts.push(barChart('decode: tokens per second (longer is faster)', groups, false, top));
    top += charts[charts.length - 1].height + 20;
  }
  const header = `<text x="0" y="16" font-weight="bold" font-size="15">metal-decode bench</text>` +
    `<text x="0" y="32" font-size="11">${xml(describeMachine(report.machine))}</text>`;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${top}" viewBox="0 0 ${WIDTH} ${top}" font-family="sans-serif" font-size="12">\n` +
    `<rect width="100%" height="100%" fill="white"/>\n${header}\n${charts.map((c) => c.svg).join('\n')}\n</svg>\n`;
}

function tableHtml(table: Table): string {
  const row = (cells: string[], tag: string) => `<tr>${cells.map((c) => `<${tag}>${xml(c)}</${tag}>`).join('')}</tr>`;
  return `<h2>${xml(table.title)}</h2>\n<table>\n${row(table.header, 'th')}\n${table.rows.map((r) => row(r, 'td')).join('\n')}\n</table>`;
}

/** A self-contained HTML page: machine, chart, tables, and the unavailable backends with their reasons. */
export function reportHtml(report: BenchReport): string {
  const unavailable = report.backends.filter((b) => !b.available);
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>metal-decode bench</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}td:first-child,td:nth-child(2){text-align:left}</style>
</head>
<body>
<h1>metal-decode bench</h1>
<p>${xml(describeMachine(report.machine))}</p>
<p>Started ${xml(report.startedAt)}, took ${(report.durationMs / 1000).toFixed(1)} s. Seed ${report.settings.seed}.</p>
${unavailable.length > 0 ? `<ul>${unavailable.map((b) => `<li>${xml(b.name)}: not available: ${xml(b.reason)}</li>`).join('')}</ul>` : ''}
${reportSvg(report)}
${reportTables(report).map(tableHtml).join('\n')}
</body>
</html>
`;
}
