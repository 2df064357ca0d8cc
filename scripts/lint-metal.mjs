#!/usr/bin/env node
// lint-metal.mjs: what the Metal compiler rejects and the C++ compilers of
// the emulator and of check-metal.sh let through, checked in the kernel
// sources. Today: every [[attribute]] must be one Metal knows. The C++
// compilers only warn about attributes they do not know (the emulator must
// silence that warning, since every Metal attribute is unknown to them),
// so a misspelt [[thread_position_in_grip]] would build and run here, and
// fail to compile on a Mac. And the reverse, what Metal accepts and the
// emulator would bind wrongly: the emulator passes a kernel's arguments by
// position (native/emu/kernel_binding.h), so its [[buffer(i)]] parameters
// must come in order 0, 1, 2, ... with none missing. And the language
// version: each feature newer than METAL_FLOOR (the version every macOS the
// package supports compiles) must sit behind `#if __METAL_VERSION__ >= N`,
// or an older Mac's compiler rejects or, worse, ignores it.
//
//   node scripts/lint-metal.mjs [files...]    default: metal/*.metal and metal/*.h
//   node scripts/lint-metal.mjs --min-version  the -std= the kernels need (for xcrun metal)
//
// Run by scripts/check-metal.sh, and before the emulator's kernels are
// compiled (binding.gyp, CMakeLists.txt). Exit 1 with file:line messages.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

// The attributes of the Metal Shading Language a compute kernel may use
// (argument tables, kernel inputs, function attributes), and the standard
// C++ ones it accepts.
export const METAL_ATTRIBUTES = new Set([
  'buffer',
  'texture',
  'sampler',
  'threadgroup',
  'function_constant',
  'stage_in',
  'id',
  'dispatch_quadgroups_per_threadgroup',
  'dispatch_simdgroups_per_threadgroup',
  'dispatch_threads_per_threadgroup',
  'grid_origin',
  'grid_size',
  'quadgroup_index_in_threadgroup',
  'quadgroups_per_threadgroup',
  'simdgroup_index_in_threadgroup',
  'simdgroups_per_threadgroup',
  'thread_index_in_quadgroup',
  'thread_index_in_simdgroup',
  'thread_index_in_threadgroup',
  'thread_position_in_grid',
  'thread_position_in_threadgroup',
  'threadgroup_position_in_grid',
  'threadgroups_per_grid',
  'threads_per_grid',
  'threads_per_simdgroup',
  'threads_per_threadgroup',
  'max_total_threads_per_threadgroup',
  'maybe_unused',
  'fallthrough',
  'nodiscard',
  'deprecated',
  'likely',
  'unlikely',
]);

// The language version every supported Mac compiles: macOS 11 (the
// deployment target) has Metal 2.3, which the Apple7 GPUs (M1 and later)
// the device requires all run, and which brought simdgroup matrices.
export const METAL_FLOOR = 230;

// The Metal Shading Language version that introduced each feature the
// kernels use or might (the specification's "since" notes, macOS column).
// A feature at or below METAL_FLOOR needs no guard.
export const METAL_FEATURES = [
  { name: '#pragma METAL fp', version: 320, pattern: /#\s*pragma\s+METAL\s+fp\b/ },
  { name: 'bfloat', version: 310, pattern: /\bbfloat[0-9]*\b/ },
  { name: 'atomic_float', version: 300, pattern: /\batomic_float\b/ },
  {
    name: 'simdgroup matrices',
    version: 230,
    pattern: /\bsimdgroup_(?:float|half|bfloat)8x8\b|\bsimdgroup_matrix\b|\bsimdgroup_(?:load|store|multiply_accumulate|multiply)\s*\(/,
  },
  { name: 'SIMD-group reductions', version: 210, pattern: /\bsimd_(?:sum|product|max|min|and|or|xor|prefix_\w+)\s*\(/ },
  { name: 'SIMD-group permutes', version: 200, pattern: /\bsimd_(?:shuffle\w*|broadcast\w*)\s*\(/ },
  { name: 'SIMD-group barriers', version: 200, pattern: /\bsimdgroup_barrier\s*\(/ },
];

const versionText = (v) => `${Math.floor(v / 100)}.${Math.floor(v / 10) % 10}`;

// Each line's guard: the version an enclosing `#if __METAL_VERSION__ >= N`
// promises (0 where none does). An #else or #elif of such a guard promises
// nothing.
function guardedVersions(lines) {
  const stack = [];
  return lines.map((line) => {
    const directive = line.match(/^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)/);
    if (directive) {
      const [, word, rest] = directive;
      const promised = Number(rest.match(/__METAL_VERSION__\s*>=\s*(\d+)/)?.[1] ?? 0);
      if (word === 'if') stack.push(promised);
      else if (word === 'ifdef' || word === 'ifndef') stack.push(0);
      else if (word === 'elif') stack[stack.length - 1] = promised;
      else if (word === 'else') stack[stack.length - 1] = 0;
      else stack.pop();
    }
    return Math.max(0, ...stack);
  });
}

/** Uses of features newer than METAL_FLOOR without a version guard. */
function languageVersionProblems(code, file) {
  const problems = [];
  const lines = code.split('\n');
  const guards = guardedVersions(lines);
  lines.forEach((line, i) => {
    for (const feature of METAL_FEATURES) {
      if (feature.version <= METAL_FLOOR || guards[i] >= feature.version || !feature.pattern.test(line)) continue;
      problems.push(
        `${file}:${i + 1}: ${feature.name} needs Metal ${versionText(feature.version)}, newer than the ` +
          `${versionText(METAL_FLOOR)} every supported macOS compiles: put it under #if __METAL_VERSION__ >= ${feature.version}`,
      );
    }
  });
  return problems;
}

/** The newest language version the unguarded code of `texts` uses. */
export function requiredMetalVersion(texts) {
  let needed = 0;
  for (const text of texts) {
    const lines = stripComments(text).split('\n');
    const guards = guardedVersions(lines);
    lines.forEach((line, i) => {
      for (const feature of METAL_FEATURES) if (guards[i] < feature.version && feature.pattern.test(line)) needed = Math.max(needed, feature.version);
    });
  }
  return needed;
}

function stripComments(text) {
  return text.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' ')).replace(/\/\/[^\n]*/g, '');
}

/** Problems in one source text, as "file:line: message". */
export function lintMetal(text, file) {
  const problems = [];
  const code = stripComments(text);
  for (const match of code.matchAll(/\[\[([\s\S]*?)\]\]/g)) {
    const line = code.slice(0, match.index).split('\n').length;
    for (const part of match[1].split(/,(?![^(]*\))/)) {
      const name = part.trim().match(/^[A-Za-z_][A-Za-z0-9_:]*/)?.[0];
      if (!name) {
        problems.push(`${file}:${line}: malformed attribute [[${match[1].trim()}]]`);
      } else if (!METAL_ATTRIBUTES.has(name)) {
        problems.push(`${file}:${line}: [[${name}]] is not a Metal attribute (Metal's: ${[...METAL_ATTRIBUTES].join(', ')})`);
      }
    }
  }
  problems.push(...bufferOrderProblems(code, file));
  problems.push(...languageVersionProblems(code, file));
  return problems;
}

// Each kernel's [[buffer(i)]] indices, in parameter order, must be 0, 1, ...
function bufferOrderProblems(code, file) {
  const problems = [];
  for (const kernel of code.matchAll(/\bkernel\s+void\s+(\w+)\s*\(/g)) {
    // The parameter list: up to the parenthesis that closes the one after the name.
    let depth = 1,
      end = kernel.index + kernel[0].length;
    for (; end < code.length && depth > 0; end++) depth += code[end] === '(' ? 1 : code[end] === ')' ? -1 : 0;
    const parameters = code.slice(kernel.index + kernel[0].length, end - 1);
    const indices = [...parameters.matchAll(/\[\[\s*buffer\s*\(\s*(\d+)\s*\)\s*\]\]/g)].map((m) => Number(m[1]));
    if (indices.some((index, i) => index !== i)) {
      const line = code.slice(0, kernel.index).split('\n').length;
      problems.push(
        `${file}:${line}: kernel ${kernel[1]} declares [[buffer(${indices.join(')]], [[buffer(')})]] in that order; ` +
          `the emulator binds arguments by position, so they must be [[buffer(${indices.map((_, i) => i).join(')]], [[buffer(')})]]`,
      );
    }
  }
  return problems;
}

function defaultFiles() {
  const dir = join(root, 'metal');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.metal') || f.endsWith('.h'))
    .sort()
    .map((f) => join(dir, f));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  if (args[0] === '--min-version') {
    // What `xcrun metal -std=` must accept: the floor, unless unguarded
    // code needs more (which the lint above reports as a problem).
    const needed = Math.max(METAL_FLOOR, requiredMetalVersion(defaultFiles().map((f) => readFileSync(f, 'utf8'))));
    process.stdout.write(`macos-metal${versionText(needed)}\n`);
  } else {
    lintFiles(args);
  }
}

function lintFiles(args) {
  const stampAt = args.indexOf('--stamp');
  const stamp = stampAt >= 0 ? args.splice(stampAt, 2)[1] : undefined;
  const files = args.length ? args : defaultFiles();
  const problems = files.flatMap((f) => lintMetal(readFileSync(f, 'utf8'), relative(process.cwd(), f) || f));
  if (problems.length) {
    console.error(problems.join('\n'));
    process.exit(1);
  }
  if (stamp) writeFileSync(stamp, `${files.length} files checked\n`);
}
