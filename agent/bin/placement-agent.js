#!/usr/bin/env node
// Launcher: runs the TypeScript entry through tsx's ESM API, so the bin works
// straight after `npm ci` without a build step.
import { register } from 'tsx/esm/api';

register();
await import(new URL('../src/cli.ts', import.meta.url).href);
