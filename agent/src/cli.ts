// Process entry: real stdout/stderr, graceful stop on SIGTERM/SIGINT.
import { main } from './main.js';

const stop = new AbortController();
process.once('SIGTERM', () => stop.abort());
process.once('SIGINT', () => stop.abort());
const code = await main(process.argv.slice(2), {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
  signal: stop.signal,
});
process.exitCode = code;
