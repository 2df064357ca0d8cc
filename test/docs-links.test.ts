// docs-links.test.ts: every relative link in the README and the docs leads
// to a file of the repository, and every #anchor to a heading of it (as
// GitHub makes heading anchors). Links to the web are not fetched: CI
// cannot reach it, and a page elsewhere is not ours to keep.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

import { describe, expect, test } from 'vitest';

import { ROOT } from './helpers.js';

const DOCS = [
  'README.md',
  'ARCHITECTURE.md',
  'CHANGELOG.md',
  'bench/README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

// GitHub's anchor for a heading: lower case, punctuation but - and _ dropped, spaces as -.
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchors(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchorOf(m[1])));
}

// [text](target) outside code blocks and inline code.
function links(file: string): string[] {
  const text = readFileSync(file, 'utf8')
    .replace(/^```[\s\S]*?^```/gm, '')
    .replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]).filter((target) => !/^(https?|mailto):/.test(target));
}

describe('links in the docs', () => {
  test.each(DOCS)('%s: every relative link and anchor resolves', (doc) => {
    const file = join(ROOT, doc);
    const broken: string[] = [];
    for (const target of links(file)) {
      const [path, anchor] = target.split('#');
      const to = path === '' ? file : join(dirname(file), path);
      if (!existsSync(to)) broken.push(`${target} (no ${relative(ROOT, to)})`);
      else if (anchor !== undefined && to.endsWith('.md') && !anchors(to).has(anchor)) broken.push(`${target} (no heading #${anchor})`);
    }
    expect(broken).toEqual([]);
  });
});
