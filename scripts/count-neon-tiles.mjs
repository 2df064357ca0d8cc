#!/usr/bin/env node
// count-neon-tiles.mjs: what one block of 8 repacked rows costs each NEON
// table's tile, and llama.cpp's own NEON kernels for the same layout, in
// instructions executed, counted under qemu-user (one instruction per
// translated block, each logged). Each program runs its kernel once and
// twice (the difference is one call, without the process's start-up and
// the making of its data), on rows of 4 and of 8 blocks (the difference
// over 4 is one block, without the call's set-up).
//
// There is no Arm machine here to time the tiles on; this is the counted
// half of the argument for their speed (bench/README.md gives the rest).
// Each count is kept by address, so that each instruction is also put on
// the execution unit it issues on: firestorm-model.mjs turns those into
// the cycles an M1's performance core needs at least, a measure in which
// a spilled register's reload no longer weighs as much as a multiply.
// llama.cpp's kernels are compiled from the source node-llama-cpp ships
// (its git bundle), with the same cross compiler and flags as ours. Its
// 4-token kernels read activations interleaved at quantization, as ours
// do for Q4_0 and Q8_0 (quads of tokens, repack.h); neither count has the
// interleaving, done once a batch. Our K types' tiles read each token's row.
//
// With --check it fails if, wherever a tile has 2 tokens or more, an i8mm
// tile executes over 1.05x the sdot tile's instructions (the i8mm table
// replaces the sdot one on every layout where the CPU has i8mm, and takes
// half the multiplies), or if, at 4 tokens, one of ours needs more of
// Firestorm's cycles than llama.cpp's kernel for it, or executes over
// 1.2x its instructions (guards on what bench/README.md argues). F16 is
// counted at 4 tokens against llama.cpp's tinyBLAS, which sums in float16
// where ours sums in float32: its bounds are above f16Row.
//
//   node scripts/count-neon-tiles.mjs BUILD_DIR [--check] [--types=Q4_0,Q6_K] [--no-llama-cpp]
// BUILD_DIR: an aarch64 build (scripts/test-native-cross.sh's
// build-cmake-aarch64) with md_tile_instructions.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { disassemble, firestormCycles } from './firestorm-model.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const check = args.includes('--check');
const withLlamaCpp = !args.includes('--no-llama-cpp');
const buildDir = args.find((a) => !a.startsWith('--'));
const typesArg = args.find((a) => a.startsWith('--types='));
if (!buildDir) {
  console.error('usage: count-neon-tiles.mjs BUILD_DIR [--check] [--types=Q4_0,Q6_K] [--no-llama-cpp]');
  process.exit(2);
}
const ours = join(buildDir, 'md_tile_instructions');
if (!existsSync(ours)) {
  console.error(`count-neon-tiles: ${ours} is missing; build the aarch64 tree first (scripts/test-native-cross.sh)`);
  process.exit(2);
}

// How many times a process executes each instruction, by address: qemu
// logs each one it runs (-singlestep: one per block, -d exec). cpu: qemu's
// CPU model (its default, max, has every extension).
function executed(argv, cpu = 'max') {
  return new Promise((resolve, reject) => {
    const child = spawn('qemu-aarch64', ['-cpu', cpu, '-singlestep', '-d', 'exec,nochain', ...argv], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const counts = new Map();
    let partial = '';
    child.stderr.on('data', (chunk) => {
      const lines = (partial + chunk.toString('latin1')).split('\n');
      partial = lines.pop();
      for (const line of lines) {
        // "Trace 0: 0x... [flags/ADDRESS/...] symbol"
        const address = /^Trace \d+: \S+ \[[0-9a-f]+\/([0-9a-f]+)\//.exec(line)?.[1];
        if (address) counts.set(address, (counts.get(address) ?? 0) + 1);
      }
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`${argv.join(' ')}: exit ${code}: ${partial.trim()}`));
      else if (counts.size === 0) reject(new Error(`${argv.join(' ')}: qemu logged no instruction this script can read`));
      else resolve(counts);
    });
  });
}
// a - b, address by address, scaled by `scale`.
function difference(a, b, scale = 1) {
  const out = new Map();
  for (const [address, n] of a) out.set(address, n * scale);
  for (const [address, n] of b) out.set(address, (out.get(address) ?? 0) - n * scale);
  for (const [address, n] of out) if (n === 0) out.delete(address);
  return out;
}
// One block's instructions by address: argsFor(blocks, calls) gives the command line.
async function perBlockByAddress(argsFor, cpu) {
  const call = async (blocks) => difference(await executed(argsFor(blocks, 2), cpu), await executed(argsFor(blocks, 1), cpu));
  return difference(await call(8), await call(4), 1 / 4);
}
// One block's cost: its instructions executed, and Firestorm's cycles for them (firestorm-model.mjs).
const disassemblies = new Map();
async function perBlock(argsFor, cpu) {
  const byAddress = await perBlockByAddress(argsFor, cpu);
  const binary = argsFor(1, 1)[0];
  if (!disassemblies.has(binary)) disassemblies.set(binary, disassemble(binary));
  const { retired, cycles } = firestormCycles(byAddress, disassemblies.get(binary));
  return { instructions: retired, cycles };
}

// The compiler that built BUILD_DIR (CMake's record of it), which builds llama.cpp's kernels too:
// GCC's cross compiler, or clang (Apple's compiler is clang) targeting aarch64.
function compilerOf(dir) {
  const files = join(dir, 'CMakeFiles');
  const version = readdirSync(files).find((d) => existsSync(join(files, d, 'CMakeCXXCompiler.cmake')));
  if (!version) throw new Error(`count-neon-tiles: ${dir} has no CMakeFiles/*/CMakeCXXCompiler.cmake`);
  const id = /set\(CMAKE_CXX_COMPILER_ID "(\w+)"\)/.exec(readFileSync(join(files, version, 'CMakeCXXCompiler.cmake'), 'utf8'))?.[1];
  if (id === 'Clang') return { name: 'clang', command: 'clang++', target: ['--target=aarch64-linux-gnu'] };
  if (id === 'GNU') return { name: 'gcc', command: 'aarch64-linux-gnu-g++', target: [] };
  throw new Error(`count-neon-tiles: ${dir} was built by ${id}; gcc or clang expected`);
}
const compiler = compilerOf(buildDir);

// llama.cpp's arm repack kernels and llama_cpp_neon_tiles.cpp, built static for aarch64.
function buildLlamaCpp() {
  const bundle = join(root, 'node_modules/node-llama-cpp/llama/gitRelease.bundle');
  if (!existsSync(bundle)) throw new Error(`count-neon-tiles: ${bundle} is missing (npm install), or pass --no-llama-cpp`);
  const dir = mkdtempSync(join(tmpdir(), 'md-llama-neon-'));
  execFileSync('git', ['clone', '--quiet', bundle, join(dir, 'llama.cpp')], { stdio: 'ignore' });
  const ggml = join(dir, 'llama.cpp/ggml');
  const flags = [...compiler.target, '-std=c++17', '-O3', '-DNDEBUG', '-march=armv8.2-a+dotprod+i8mm+fp16'];
  const includes = ['include', 'src', 'src/ggml-cpu'].map((d) => `-I${join(ggml, d)}`);
  const compile = (source, object) => execFileSync(compiler.command, [...flags, ...includes, '-c', source, '-o', object], { stdio: 'inherit' });
  compile(join(ggml, 'src/ggml-cpu/arch/arm/repack.cpp'), join(dir, 'repack.o'));
  compile(join(root, 'native/bench/llama_cpp_neon_tiles.cpp'), join(dir, 'harness.o'));
  const binary = join(dir, 'llama_cpp_neon_tiles');
  // The generic fallbacks its NEON kernels name (never called: every feature they need is on) stay unresolved.
  const link = (output, objects) =>
    execFileSync(compiler.command, [...compiler.target, '-static', '-o', output, ...objects, '-Wl,--unresolved-symbols=ignore-all'], {
      stdio: 'inherit',
    });
  link(binary, [join(dir, 'harness.o'), join(dir, 'repack.o')]);
  // Its F16 prompt kernel (tinyBLAS, llamafile/sgemm.cpp) and llama_cpp_neon_f16.cpp.
  compile(join(ggml, 'src/ggml-cpu/llamafile/sgemm.cpp'), join(dir, 'sgemm.o'));
  compile(join(root, 'native/bench/llama_cpp_neon_f16.cpp'), join(dir, 'f16_harness.o'));
  const f16Binary = join(dir, 'llama_cpp_neon_f16');
  link(f16Binary, [join(dir, 'f16_harness.o'), join(dir, 'sgemm.o')]);
  return { binary, f16Binary, dir };
}

// Our layouts and llama.cpp's kernels for them: x4 takes sdot, x8 i8mm.
const layouts = {
  Q4_0: { sdot: 'q4_0_4x4', i8mm: 'q4_0_4x8' },
  Q8_0: { sdot: 'q8_0_4x4', i8mm: 'q8_0_4x8' },
  Q4_K: { sdot: 'q4_K_8x4', i8mm: 'q4_K_8x8' },
  Q5_K: { sdot: 'q5_K_8x4', i8mm: 'q5_K_8x8' },
  Q6_K: { sdot: 'q6_K_8x4', i8mm: 'q6_K_8x8' },
};
const types = typesArg ? typesArg.slice('--types='.length).split(',') : [...Object.keys(layouts), 'F16'];
const llama = withLlamaCpp ? buildLlamaCpp() : null;

// F16 (rows as the file has them) at 4 tokens, against llama.cpp's prompt
// kernel, tinyBLAS, which takes 8 tokens or more on Arm (fewer go to its
// dot product): its cost at 8 tokens, halved. Ours sums in float32, 4
// lanes an instruction; tinyBLAS in float16, 8 lanes: ours issues twice
// its multiply-adds on the SIMD units, before either's other work. Both
// our tables take fmlal on a CPU with FEAT_FHM (every Apple silicon chip:
// qemu's default CPU); on one without (a Cortex-A76, the row "F16, no
// FHM") the NEON table converts its operands first. --check's bounds hold
// today's ratios against a regression: with fmlal 1.25x the instructions
// (1.19x now) and 1.7x the cycles (1.33x with clang, 1.58x with GCC);
// converting 2.4x and 3x (2.12x and 2.70x at most now). On a Mac, F16
// prompts of 32 tokens or more go to Accelerate, as llama.cpp's do
// (dot_blas.cpp).
const kF16FmlalBound = { instructions: 1.25, cycles: 1.7 };
const kF16ConvertingBound = { instructions: 2.4, cycles: 3 };
// Quantized layouts at 4 tokens: at most llama.cpp's Firestorm cycles
// (the bar: its speed or better), and 1.2x its instructions.
const kCyclesBound = 1.0;
const kInstructionsBound = 1.2;

const measures = ['instructions', 'cycles'];
const rows = { instructions: [], cycles: [] };
let failures = 0;
const shown = (x) => (Number.isNaN(x) ? '-' : Number.isInteger(x) ? String(x) : x.toFixed(1));
const ratio = (a, b) => (Number.isNaN(b) ? '-' : `${(a / b).toFixed(2)}x`);
const none = { instructions: NaN, cycles: NaN };
const halved = (c) => ({ instructions: c.instructions / 2, cycles: c.cycles / 2 });
function row(label, tokens, sdot, theirSdot, i8mm, theirI8mm) {
  for (const m of measures) {
    const i8mmCells = i8mm ? `${shown(i8mm[m])} | ${shown(theirI8mm[m])} | ${ratio(i8mm[m], theirI8mm[m])}` : '- | - | -';
    rows[m].push(`| ${label} | ${tokens} | ${shown(sdot[m])} | ${shown(theirSdot[m])} | ${ratio(sdot[m], theirSdot[m])} | ${i8mmCells} |`);
  }
}
function bound(what, mine, theirs, limit) {
  for (const [m, factor] of Object.entries(limit)) {
    if (check && mine[m] > factor * theirs[m]) {
      console.error(`count-neon-tiles: ${what}: ours takes ${shown(mine[m])} ${m}, llama.cpp's ${shown(theirs[m])} (bound ${factor}x)`);
      failures++;
    }
  }
}

async function f16Row() {
  const ourCost = async (isa, cpu) => perBlock((blocks, calls) => [ours, isa, 'F16', '4', String(blocks), String(calls)], cpu);
  const sdot = await ourCost('neon');
  const i8mm = await ourCost('neon-i8mm');
  const converting = await ourCost('neon', 'cortex-a76');
  const theirs = llama ? halved(await perBlock((blocks, calls) => [llama.f16Binary, String(blocks), String(calls)])) : none;
  row('F16', 4, sdot, theirs, i8mm, theirs);
  row('F16, no FHM', 4, converting, theirs, null, null);
  bound('F16 at 4 tokens, the neon table', sdot, theirs, kF16FmlalBound);
  bound('F16 at 4 tokens, the neon-i8mm table', i8mm, theirs, kF16FmlalBound);
  bound('F16 at 4 tokens without FHM', converting, theirs, kF16ConvertingBound);
}

try {
  for (const type of types) {
    if (type === 'F16') {
      await f16Row();
      continue;
    }
    for (const tokens of [1, 2, 4]) {
      const ourCost = async (isa) => perBlock((blocks, calls) => [ours, isa, type, String(tokens), String(blocks), String(calls)]);
      // llama.cpp has a 1-token kernel (gemv) and a 4-token one (gemm); 2 tokens take the gemv twice.
      const theirCost = async (kernel) => {
        if (!llama) return none;
        const [kTokens, times] = tokens === 4 ? [4, 1] : [1, tokens];
        const c = await perBlock((blocks, calls) => [llama.binary, kernel, String(kTokens), String(blocks), String(calls)]);
        return { instructions: times * c.instructions, cycles: times * c.cycles };
      };
      const sdot = await ourCost('neon');
      const i8mm = await ourCost('neon-i8mm');
      const [theirSdot, theirI8mm] = [await theirCost(layouts[type].sdot), await theirCost(layouts[type].i8mm)];
      row(type, tokens, sdot, theirSdot, i8mm, theirI8mm);
      if (check && tokens >= 2 && i8mm.instructions > 1.05 * sdot.instructions) {
        console.error(`count-neon-tiles: ${type} at ${tokens} tokens: the i8mm tile takes ${i8mm.instructions}, the sdot tile ${sdot.instructions}`);
        failures++;
      }
      if (tokens === 4) {
        const limit = { instructions: kInstructionsBound, cycles: kCyclesBound };
        bound(`${type} at 4 tokens, sdot`, sdot, theirSdot, limit);
        bound(`${type} at 4 tokens, i8mm`, i8mm, theirI8mm, limit);
      }
    }
  }
} finally {
  if (llama) rmSync(llama.dir, { recursive: true, force: true });
}
const header = [
  '| layout | tokens | ours, sdot | llama.cpp, sdot | ours / llama.cpp | ours, i8mm | llama.cpp, i8mm | ours / llama.cpp |',
  '|---|---|---|---|---|---|---|---|',
];
console.log(`Instructions executed per block of 8 rows (32 values for Q4_0, Q8_0 and F16, 256 for the K types), built by ${compiler.name}:\n`);
console.log([...header, ...rows.instructions].join('\n'));
console.log(`\nFirestorm's cycles per block, modelled from those instructions by unit (scripts/firestorm-model.mjs), built by ${compiler.name}:\n`);
console.log([...header, ...rows.cycles].join('\n'));
if (failures > 0) process.exit(1);
