#!/usr/bin/env node
// count-neon-tiles.mjs: what one block of 8 repacked rows costs each NEON
// table's tile, in instructions executed, counted under qemu-user (one
// instruction per translated block, each logged). md_tile_instructions
// runs the tile once and twice (the difference is one call, without the
// process's start-up and the making of its data), on rows of 4 and of 8
// blocks (the difference over 4 is one block, without the call's set-up).
//
// There is no Arm machine here to time the tiles on; this is the counted
// half of the argument for their speed (bench/README.md gives the other:
// what each instruction is worth on Apple's cores). With --check it fails
// unless the i8mm tile of every layout takes fewer instructions than the
// sdot tile at 2 and 4 tokens.
//
//   node scripts/count-neon-tiles.mjs BUILD_DIR [--check] [--types=Q4_0,Q6_K]
// BUILD_DIR: an aarch64 build (scripts/test-native-cross.sh's
// build-cmake-aarch64) with md_tile_instructions.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const args = process.argv.slice(2);
const check = args.includes('--check');
const buildDir = args.find((a) => !a.startsWith('--'));
const typesArg = args.find((a) => a.startsWith('--types='));
if (!buildDir) {
  console.error('usage: count-neon-tiles.mjs BUILD_DIR [--check] [--types=Q4_0,Q6_K]');
  process.exit(2);
}
const binary = join(buildDir, 'md_tile_instructions');
if (!existsSync(binary)) {
  console.error(`count-neon-tiles: ${binary} is missing; build the aarch64 tree first (scripts/test-native-cross.sh)`);
  process.exit(2);
}

// Instructions the process executes: qemu logs each one it runs (-singlestep: one per block, -d exec).
function executed(isa, type, tokens, blocks, calls) {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'qemu-aarch64',
      ['-singlestep', '-d', 'exec,nochain', '-L', '/usr/aarch64-linux-gnu', binary, isa, type, String(tokens), String(blocks), String(calls)],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let lines = 0;
    let tail = '';
    child.stderr.on('data', (chunk) => {
      const text = chunk.toString('latin1');
      for (let i = text.indexOf('Trace '); i !== -1; i = text.indexOf('Trace ', i + 1)) lines++;
      tail = (tail + text).slice(-400);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`${isa} ${type} ${tokens} ${blocks} ${calls}: exit ${code}: ${tail.trim().split('\n').pop()}`));
      else resolve(lines);
    });
  });
}

const types = typesArg ? typesArg.slice('--types='.length).split(',') : ['Q4_0', 'Q8_0', 'Q4_K', 'Q5_K', 'Q6_K'];
const tokenCounts = [1, 2, 4];
const rows = [];
let failures = 0;
for (const type of types) {
  for (const tokens of tokenCounts) {
    const perBlock = {};
    for (const isa of ['neon', 'neon-i8mm']) {
      const call = async (blocks) => (await executed(isa, type, tokens, blocks, 2)) - (await executed(isa, type, tokens, blocks, 1));
      perBlock[isa] = ((await call(8)) - (await call(4))) / 4;
    }
    const ratio = perBlock['neon-i8mm'] / perBlock.neon;
    rows.push(`| ${type} | ${tokens} | ${perBlock.neon} | ${perBlock['neon-i8mm']} | ${ratio.toFixed(2)} |`);
    if (check && tokens >= 2 && !(ratio < 1)) {
      console.error(`count-neon-tiles: ${type} at ${tokens} tokens: the i8mm tile takes ${ratio.toFixed(2)}x the sdot tile's instructions`);
      failures++;
    }
  }
}
console.log('Instructions executed per block of 8 rows (32 values for Q4_0 and Q8_0, 256 for the K types):\n');
console.log('| layout | tokens | neon (sdot) | neon-i8mm (smmla) | i8mm / sdot |');
console.log('|---|---|---|---|---|');
console.log(rows.join('\n'));
if (failures > 0) process.exit(1);
