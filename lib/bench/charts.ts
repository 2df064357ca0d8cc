// charts.ts: the report as an SVG bar chart (and an HTML page holding it
// with the tables). Written by hand: a few rectangles and labels do not
// need a charting library.
import { describeMachine } from './machine.js';
import type { BenchReport } from './report.js';
import { reportTables, type Table } from './tables.js';

const COLORS: Record<string, string> = { metal: '#d9480f', emulated: '#7048e8', native: '#1971c2', js: '#2f9e44', 'llama.cpp': '#495057' };
const WIDTH = 960;
const LABEL = 190; // the group labels on the left
const VALUE_ROOM = 230; // right of the longest bar: its value label
const BAR = 15;
const CHAR = 6.2; // the width of a character at font-size 11, roughly, to keep labels inside the view

const xml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

interface Bar {
  series: string;
  /** A lighter bar of the same series (decode: one token per submission). */
  light?: boolean;
  value: number;
  text: string;
}
interface Group {
  label: string;
  bars: Bar[];
}
interface Scale {
  width: (v: number) => number;
  ticks: { at: number; label: string }[];
}

const span = WIDTH - LABEL - VALUE_ROOM;

// Decades from below the smallest value to above the largest: sampler
// times span several of them.
function logScale(min: number, max: number, unit: string): Scale {
  const low = Math.floor(Math.log10(min));
  const high = Math.max(low + 1, Math.ceil(Math.log10(max)));
  const width = (v: number) => (v <= 0 ? 0 : Math.max(1, ((Math.log10(v) - low) / (high - low)) * span));
  const ticks = [];
  for (let e = low; e <= high; e++) ticks.push({ at: 10 ** e, label: `${(10 ** e).toLocaleString('en-US')} ${unit}` });
  return { width, ticks };
}

// From 0, in steps of 1, 2 or 5 times a power of ten.
function linearScale(max: number, unit: string): Scale {
  const rough = max / 5;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough)!;
  const top = Math.ceil(max / step) * step;
  const ticks = [];
  for (let v = 0; v <= top + step / 2; v += step) ticks.push({ at: v, label: `${v.toLocaleString('en-US')} ${unit}` });
  return { width: (v: number) => (v / top) * span, ticks };
}

function legend(items: { label: string; color: string; light?: boolean }[], y: number): string {
  let x = LABEL;
  return items
    .map((item) => {
      const part =
        `<rect class="swatch" x="${x}" y="${y - 9}" width="12" height="10" fill="${item.color}"${item.light ? ' fill-opacity="0.4"' : ''}/>` +
        `<text x="${x + 16}" y="${y}" font-size="11">${xml(item.label)}</text>`;
      x += 16 + item.label.length * CHAR + 18;
      return part;
    })
    .join('');
}

// Horizontal bars on an axis with ticks, one group per row label, one bar
// per series, a legend above.
function barChart(
  title: string,
  groups: Group[],
  scale: Scale,
  legendItems: Parameters<typeof legend>[0],
  top: number,
): { svg: string; height: number } {
  const parts = [`<text x="0" y="${top + 14}" font-weight="bold">${xml(title)}</text>`, legend(legendItems, top + 32)];
  const axisTop = top + 44;
  let y = axisTop + 18;
  const rows: string[] = [];
  for (const group of groups) {
    rows.push(`<text x="${LABEL - 8}" y="${y + 11}" text-anchor="end" font-size="11">${xml(group.label)}</text>`);
    for (const bar of group.bars) {
      const w = scale.width(bar.value);
      const color = COLORS[bar.series] ?? '#868e96';
      rows.push(
        `<rect class="bar" x="${LABEL}" y="${y}" width="${w.toFixed(1)}" height="${BAR - 3}" fill="${color}"${bar.light ? ' fill-opacity="0.4"' : ''}><title>${xml(`${bar.series}: ${bar.text}`)}</title></rect>`,
        `<text x="${(LABEL + w + 4).toFixed(1)}" y="${y + 10}" font-size="10">${xml(bar.text)}</text>`,
      );
      y += BAR;
    }
    y += 7;
  }
  // Ticks and grid lines across the bars, labels on top.
  for (const tick of scale.ticks) {
    const x = LABEL + scale.width(tick.at);
    parts.push(
      `<line class="tick" x1="${x.toFixed(1)}" y1="${axisTop + 4}" x2="${x.toFixed(1)}" y2="${y - 4}" stroke="#dee2e6"/>`,
      `<text x="${x.toFixed(1)}" y="${axisTop}" font-size="10" text-anchor="middle" fill="#495057">${xml(tick.label)}</text>`,
    );
  }
  parts.push(...rows);
  return { svg: parts.join('\n'), height: y - top };
}

const seriesLegend = (series: string[]) => series.map((s) => ({ label: s, color: COLORS[s] ?? '#868e96' }));

/** The report's charts as one SVG document. */
export function reportSvg(report: BenchReport): string {
  const charts: { svg: string; height: number }[] = [];
  let top = 48;
  if (report.sampler.length > 0) {
    const groups = [...new Map(report.sampler.map((r) => [`V=${r.vocab} ${r.config}`, r])).keys()].map((label) => ({
      label,
      bars: report.sampler
        .filter((r) => `V=${r.vocab} ${r.config}` === label)
        .map((r) => ({
          series: r.backend,
          value: r.medianUs,
          text: `${r.backend} ${r.medianUs.toFixed(1)} µs`,
        })),
    }));
    const values = report.sampler.map((r) => r.medianUs).filter((v) => v > 0);
    const scale = logScale(Math.min(...values), Math.max(...values), 'µs');
    const series = [...new Set(report.sampler.map((r) => r.backend))];
    charts.push(barChart('sampler: median time per sample() call (log scale; shorter is faster)', groups, scale, seriesLegend(series), top));
    top += charts[charts.length - 1].height + 24;
  }
  if (report.decode.length > 0) {
    const groups = report.decode.map((r) => ({
      label: `${r.backend} ${r.mode}`,
      bars: [
        ...(r.chainedTokensPerSecond === null
          ? []
          : [{ series: r.backend, value: r.chainedTokensPerSecond, text: `${r.chainedTokensPerSecond.toFixed(0)} tokens/s chained` }]),
        {
          series: r.backend,
          light: r.chainedTokensPerSecond !== null,
          value: r.onePerSubmissionTokensPerSecond,
          text: `${r.onePerSubmissionTokensPerSecond.toFixed(0)} tokens/s ${r.chainedTokensPerSecond === null ? 'on the CPU' : 'one per submission'}`,
        },
      ],
    }));
    const max = Math.max(...report.decode.flatMap((r) => [r.onePerSubmissionTokensPerSecond, r.chainedTokensPerSecond ?? 0]));
    const series = [...new Set(report.decode.map((r) => r.backend))];
    const gpu = report.decode.some((r) => r.chainedTokensPerSecond !== null);
    const legendItems = [
      ...seriesLegend(series),
      ...(gpu
        ? [
            { label: 'solid: chained', color: '#495057' },
            { label: 'light: one token per submission', color: '#495057', light: true },
          ]
        : []),
    ];
    charts.push(barChart('decode: tokens per second through generate() (longer is faster)', groups, linearScale(max, 'tokens/s'), legendItems, top));
    top += charts[charts.length - 1].height + 24;
  }
  const header =
    `<text x="0" y="16" font-weight="bold" font-size="15">metal-decode bench</text>` +
    // The chart's width holds the machine line without its CPU features (the tables and the JSON keep them).
    `<text x="0" y="34" font-size="11">${xml(describeMachine({ ...report.machine, cpuFeatures: [] }))}</text>`;
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${top}" viewBox="0 0 ${WIDTH} ${top}" font-family="sans-serif" font-size="12">\n` +
    `<rect width="100%" height="100%" fill="white"/>\n${header}\n${charts.map((c) => c.svg).join('\n')}\n</svg>\n`
  );
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
