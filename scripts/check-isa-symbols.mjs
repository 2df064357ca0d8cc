#!/usr/bin/env node
// check-isa-symbols.mjs: the files built for one instruction set (AVX2,
// AVX-VNNI, AVX-512, AMX, arm64's i8mm) must not define a shared inline function or template
// (a weak symbol) that other files use too. The linker keeps one copy of
// such a symbol for the whole library, and if it keeps the AVX-512 one, a
// CPU without AVX-512 crashes in code that was meant to be portable.
// Every weak symbol these objects define must name their own SIMD backend.
//
//   node scripts/check-isa-symbols.mjs OBJECT:Backend [OBJECT:Backend ...]
import { execFileSync } from 'node:child_process';

const pairs = process.argv.slice(2);
if (pairs.length === 0) {
  console.error('usage: check-isa-symbols.mjs dot_avx2.o:Avx2 ...');
  process.exit(2);
}
let failures = 0;
for (const pair of pairs) {
  const at = pair.lastIndexOf(':');
  const [object, backend] = [pair.slice(0, at), pair.slice(at + 1)];
  const listing = execFileSync('nm', ['-C', '--defined-only', object], { encoding: 'utf8' });
  for (const line of listing.split('\n')) {
    const match = /^[0-9a-f]*\s+([WVu])\s+(.*)$/.exec(line);
    if (!match) continue;
    const symbol = match[2];
    if (symbol.includes(`md::simd::${backend}`)) continue; // this backend's own instantiations
    if (symbol.startsWith('DW.ref.')) continue; // the exception personality's address: data, not code
    console.error(
      `${object}: defines the shared symbol "${symbol}" built for ${backend}; keep helpers of ISA-specific files in their backend's templates`,
    );
    failures++;
  }
}
if (failures > 0) process.exit(1);
console.log(`check-isa-symbols: ${pairs.length} objects define only their own backend's weak symbols`);
