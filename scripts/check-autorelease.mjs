#!/usr/bin/env node
// check-autorelease.mjs: every Objective-C message that returns an object
// runs inside an @autoreleasepool, in the Metal host code.
//
// Why: Metal returns autoreleased objects (command buffers, encoders,
// strings, errors). Node's main thread, libuv's workers and Metal's
// completion threads never drain a pool of their own, so an object made
// outside one is never freed, and a command buffer keeps every buffer it
// bound: a model's weights would never be released. A Mac shows this only
// as memory that grows; this check finds it in the code, on Linux.
//
// How: reads clang's AST dump of the file (check-metal.sh makes it with the
// stub headers) and reports, by function and line, each object-returning
// message outside a pool. A block (the completion handler) runs later on
// another thread, so the pool around its creation does not count for its
// body. A helper function may send such messages outside a pool of its own
// only if every call to it is inside one.
//
//   clang++ ... -Xclang -ast-dump -Xclang -ast-dump-filter -Xclang md::metal file.mm > ast.txt
//   node scripts/check-autorelease.mjs ast.txt
import { readFileSync } from 'node:fs';

const text = readFileSync(process.argv[2], 'utf8');

// One node per line: its depth (from the tree-drawing prefix), kind,
// address and the rest of the line.
function parse(lines) {
  const nodes = [];
  for (const line of lines) {
    const match = line.match(/^([| `-]*)([A-Za-z]\w*) (0x[0-9a-f]+)?(.*)$/);
    if (!match) continue;
    nodes.push({ depth: match[1].length / 2, kind: match[2], address: match[3], rest: match[4], children: [] });
  }
  const roots = [];
  const stack = [];
  for (const node of nodes) {
    while (stack.length && stack[stack.length - 1].depth >= node.depth) stack.pop();
    (stack.length ? stack[stack.length - 1].children : roots).push(node);
    stack.push(node);
  }
  return roots;
}

// The dump of the file's own namespace (ast-dump-filter prints nested
// matches again; the block that holds the definitions is the largest).
const blocks = text.split(/^Dumping [^\n]*:\n/m).filter((b) => b.trim());
const main = blocks.reduce((a, b) => (b.length > a.length ? b : a), '');
const roots = parse(main.split('\n'));

const FUNCTION_KINDS = new Set(['FunctionDecl', 'CXXMethodDecl', 'CXXConstructorDecl', 'CXXDestructorDecl']);
const returnsObject = (rest) => /^ <[^>]*> '(id<|id'|[A-Z]\w* \*)/.test(rest);
const lineOf = (rest, fallback) => rest.match(/line:(\d+)/)?.[1] ?? fallback;

const functions = new Map(); // address -> { name, line, unpooled: [lines], calls: [{ callee, pooled, caller }] }
let lastLine = '?';

function walk(node, fn, pooled) {
  lastLine = lineOf(node.rest, lastLine);
  if (FUNCTION_KINDS.has(node.kind) && node.address) {
    const name = node.rest.match(/ (?:used |implicit |referenced )*(~?\w+) '/)?.[1] ?? '?';
    const record = functions.get(node.address) ?? { name, line: lastLine, unpooled: [], calls: [] };
    functions.set(node.address, record);
    const prev = node.rest.match(/prev (0x[0-9a-f]+)/)?.[1];
    if (prev) functions.set(prev, record);
    fn = record;
    pooled = false;
  }
  if (node.kind === 'ObjCAutoreleasePoolStmt') pooled = true;
  if (node.kind === 'BlockExpr') pooled = false; // its body runs later, elsewhere
  if (fn && node.kind === 'ObjCMessageExpr' && returnsObject(node.rest) && !pooled) {
    const selector = node.rest.match(/selector=(\S+)/)?.[1];
    fn.unpooled.push(`line ${lastLine}: [${selector}]`);
  }
  if (fn && node.kind === 'DeclRefExpr') {
    const callee = node.rest.match(/ Function (0x[0-9a-f]+) '/)?.[1];
    if (callee) fn.calls.push({ callee, pooled, line: lastLine });
  }
  if (fn && node.kind === 'MemberExpr') {
    const callee = node.rest.match(/[.>]\w+ (0x[0-9a-f]+)/)?.[1];
    if (callee) fn.calls.push({ callee, pooled, line: lastLine });
  }
  for (const child of node.children) walk(child, fn, pooled);
}
for (const root of roots) walk(root, undefined, false);

// A function is "in a pool" when it has callers and every call to it is
// inside a pool, or comes from a function that is itself in a pool.
const records = [...new Set(functions.values())];
const callSitesOf = (record) =>
  records.flatMap((caller) => caller.calls.filter((c) => functions.get(c.callee) === record).map((c) => ({ ...c, caller })));
const inPool = new Set();
for (let changed = true; changed;) {
  changed = false;
  for (const record of records) {
    if (inPool.has(record)) continue;
    const sites = callSitesOf(record);
    if (sites.length && sites.every((c) => c.pooled || inPool.has(c.caller))) {
      inPool.add(record);
      changed = true;
    }
  }
}

const problems = [];
for (const record of records) {
  if (!record.unpooled.length || inPool.has(record)) continue;
  const outside = callSitesOf(record).filter((c) => !c.pooled && !inPool.has(c.caller));
  const where = outside.length
    ? `called outside a pool from ${outside.map((c) => `${c.caller.name} (line ${c.line})`).join(', ')}`
    : 'an entry point';
  problems.push(`${record.name} (${where}) sends object-returning messages outside @autoreleasepool: ${[...new Set(record.unpooled)].join(', ')}`);
}
const unique = [...new Set(problems)];
if (unique.length) {
  console.error(unique.join('\n'));
  process.exit(1);
}
console.log(`${records.filter((r) => r.calls.length || r.unpooled.length).length} functions checked`);
