#!/usr/bin/env node
// Launcher: runs the TypeScript entry through tsx's ESM API, so the bin works
// straight after `npm ci` without a build step (as agent/bin/placement-agent.js).
import { register } from 'tsx/esm/api';

register();
await import(new URL('../src/entry/admin.ts', import.meta.url).href);
