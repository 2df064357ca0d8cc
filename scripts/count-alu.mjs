#!/usr/bin/env node
// count-alu.mjs: the arithmetic of the matrix-vector kernels' and the
// decode attention's per-lane steps, counted from clang's LLVM IR of native/counters/alu_probes.cpp
// (the kernels' own code in check-metal's address-space mode), for
// `bench predict`'s ALU limit (lib/bench/kernel-time-model.ts).
//
// No Apple GPU compiles here, so the count is a proxy, stated as one: the
// instructions of LLVM's optimised IR (-O2, loops fully unrolled, no
// vectorisation, no contraction: the kernels' rules), each arithmetic
// instruction one ALU operation of one lane, each SIMD-group shuffle one.
// Not counted: address arithmetic (getelementptr: a GPU folds most into its
// loads' offsets), integer widenings and narrowings and bitcasts (register
// moves), loads and stores (counted apart). Apple's compiler may do better
// or worse; a Mac's GPU counters would tell.
//
//   node scripts/count-alu.mjs              the counts, as JSON, to stdout
//   node scripts/count-alu.mjs --check F    fails when a probe's ALU count is
//                                           more than 10% off the one in F
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const CLANG = process.env.CLANG ?? 'clang++';

// One lane's ALU operation each (the instruction's name after "=").
const ALU = new Set([
  'fadd',
  'fsub',
  'fmul',
  'fdiv',
  'frem',
  'fneg',
  'add',
  'sub',
  'mul',
  'udiv',
  'sdiv',
  'urem',
  'srem',
  'shl',
  'lshr',
  'ashr',
  'and',
  'or',
  'xor',
  'icmp',
  'fcmp',
  'select',
  'phi',
  'fptoui',
  'fptosi',
  'uitofp',
  'sitofp',
  'fpext',
  'fptrunc',
]);
// Intrinsics that are one ALU operation.
const ALU_INTRINSICS = /@llvm\.(?:fma|fmuladd|umin|umax|smin|smax|fshl|fshr|abs|minnum|maxnum|ctpop)\./;
// The emulator's SIMD-group collective: a shuffle is one operation; a
// reduction over the 32 lanes (simd_sum, simd_max, ...: the op it passes)
// is charged as the shuffle tree that computes it, log2(32) shuffles and
// as many operations combining them.
const SIMD_CALL = /@_ZN2md3emu17ThreadgroupRunner4simd/;
const SIMD_REDUCTION = /@_ZN2md3emu8simd_ops\d+(?:sum|maximum|minimum|product|butterflySum)I/;
const REDUCTION_STEPS = 5;
// A transcendental function (the attention's exp): charged TRANSCENDENTAL_OPS
// ALU operations, an assumption (a special-function unit at a quarter of
// the ALU rate; Apple does not publish its rate).
const TRANSCENDENTAL = /@(?:exp|expf|exp2|exp2f|log|logf|log2|log2f|sin|sinf|cos|cosf)\(/;
const TRANSCENDENTAL_OPS = 4;

// Each function the IR defines: its own counts and the functions it calls.
function parseFunctions(ir) {
  const functions = new Map();
  for (const text of ir.split(/\ndefine /).slice(1)) {
    const name = /@([\w.$]+)\(/.exec(text)?.[1];
    if (name === undefined) continue;
    const body = text.slice(0, text.indexOf('\n}'));
    const own = { alu: 0, simd: 0, loads: 0, stores: 0 };
    const calls = [];
    const blocks = [];
    let loop;
    for (const raw of body.split('\n').slice(1)) {
      const line = raw.trim();
      const label = /^([\w.]+):/.exec(line);
      if (label) {
        blocks.push(label[1]);
        continue;
      }
      // A branch to a block already seen is a loop the unroller left: the count would be per iteration.
      if (line.startsWith('br ')) for (const target of line.matchAll(/label %([\w.]+)/g)) if (blocks.includes(target[1])) loop = target[1];
      const op = /^(?:%[\w.]+ = )?(?:tail |musttail |notail )?(\w+)/.exec(line)?.[1];
      if (op === 'load') own.loads++;
      else if (op === 'store') own.stores++;
      else if (op === 'call' || op === 'invoke') {
        if (SIMD_CALL.test(line) && SIMD_REDUCTION.test(line)) {
          own.simd += REDUCTION_STEPS;
          own.alu += REDUCTION_STEPS;
        } else if (SIMD_CALL.test(line)) own.simd++;
        else if (TRANSCENDENTAL.test(line)) own.alu += TRANSCENDENTAL_OPS;
        else if (ALU_INTRINSICS.test(line)) own.alu++;
        else {
          const callee = /@([\w.$]+)\(/.exec(line)?.[1];
          if (callee !== undefined) calls.push(callee);
        }
      } else if (ALU.has(op)) own.alu++;
    }
    functions.set(name, { own, calls, loop });
  }
  return functions;
}

/** Each md_probe_* function's counts, its callees' (defined in the IR) added per call. */
export function countIr(ir) {
  const functions = parseFunctions(ir);
  const totals = new Map();
  const total = (name, path) => {
    if (totals.has(name)) return totals.get(name);
    const f = functions.get(name);
    if (f === undefined) return { alu: 0, simd: 0, loads: 0, stores: 0 }; // declared only: the runner's bookkeeping
    if (path.includes(name)) throw new Error(`${path.join(' -> ')} -> ${name}: recursion`);
    if (f.loop !== undefined)
      throw new Error(`${name} (from ${path[0]}): a loop is left in the IR (block ${f.loop}); the count would be per iteration`);
    const sum = { ...f.own };
    for (const callee of f.calls) {
      const c = total(callee, [...path, name]);
      for (const key of Object.keys(sum)) sum[key] += c[key];
    }
    totals.set(name, sum);
    return sum;
  };
  const probes = {};
  for (const name of functions.keys()) if (name.startsWith('md_probe_')) probes[name.slice('md_probe_'.length)] = total(name, []);
  return probes;
}

function compile() {
  const args = [
    '-std=c++17',
    '-O2',
    '-fno-vectorize',
    '-fno-slp-vectorize',
    '-ffp-contract=off',
    '-fno-unroll-loops',
    '-Xclang',
    '-fnative-half-arguments-and-returns',
    '-DMD_CHECK_ADDRESS_SPACES',
    '-Inative/emu',
    '-Imetal',
    '-S',
    '-emit-llvm',
    '-o',
    '-',
    'native/counters/alu_probes.cpp',
  ];
  // Full unrolling: every loop of the probes has a constant trip count.
  args.splice(1, 0, '-mllvm', '-unroll-threshold=1000000', '-mllvm', '-unroll-full-max-count=100000');
  args.splice(args.indexOf('-fno-unroll-loops'), 1);
  return execFileSync(CLANG, args, { cwd: root, encoding: 'utf8', maxBuffer: 1 << 28 });
}

function clangVersion() {
  return execFileSync(CLANG, ['--version'], { encoding: 'utf8' }).split('\n')[0];
}

function main() {
  const probes = countIr(compile());
  const result = { generator: 'node scripts/count-alu.mjs', compiler: clangVersion(), probes };
  const at = process.argv.indexOf('--check');
  if (at === -1) {
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
    return;
  }
  const recorded = JSON.parse(readFileSync(process.argv[at + 1], 'utf8'));
  const problems = [];
  for (const [name, counts] of Object.entries(recorded.probes)) {
    const now = probes[name];
    if (now === undefined) problems.push(`${name}: no longer probed`);
    else if (Math.abs(now.alu + now.simd - counts.alu - counts.simd) > 0.1 * (counts.alu + counts.simd))
      problems.push(`${name}: ${now.alu} ALU + ${now.simd} SIMD operations, recorded ${counts.alu} + ${counts.simd}`);
  }
  for (const name of Object.keys(probes)) if (!(name in recorded.probes)) problems.push(`${name}: not recorded`);
  if (problems.length > 0) {
    console.error(
      `count-alu: ${process.argv[at + 1]} is not today's counts (${clangVersion()}; recorded with ${recorded.compiler}):\n  ${problems.join('\n  ')}\nRecord them again: node scripts/count-alu.mjs > ${process.argv[at + 1]}`,
    );
    process.exit(1);
  }
  console.log(`count-alu: ${Object.keys(probes).length} probes within 10% of ${process.argv[at + 1]}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
