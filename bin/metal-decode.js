#!/usr/bin/env node
// The `metal-decode` command (npx metal-decode bench). The code is in
// lib/cli/main.ts, compiled to dist/ when the package is built.
import { main } from '../dist/lib/cli/main.js';

process.exitCode = await main(process.argv.slice(2));
