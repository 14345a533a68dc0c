// A token for a self-hosted sqld started with --auth-jwt-key-file (docs/worker.md):
// a JWT signed with the Ed25519 private key whose public half sqld holds.
//   npx tsx scripts/sqld-token.ts sqld-jwt.pem [--read-only] [--days N] > placement-db.jwt
// Full access ("a": "rw") by default; --read-only ("ro") for a reader of the
// replica only; --days sets an expiry (default: none, revoke by changing the key).
import { createPrivateKey, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { 'read-only': { type: 'boolean', default: false }, days: { type: 'string' } },
});
if (positionals.length !== 1) {
  console.error('usage: npx tsx scripts/sqld-token.ts PRIVATE_KEY.pem [--read-only] [--days N]');
  process.exit(2);
}
const days = values.days === undefined ? undefined : Number(values.days);
if (days !== undefined && !(days > 0)) {
  console.error(`--days: a positive number of days, not ${JSON.stringify(values.days)}`);
  process.exit(2);
}
const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const claims = {
  a: values['read-only'] ? 'ro' : 'rw',
  ...(days === undefined ? {} : { exp: Math.floor(Date.now() / 1000) + Math.round(days * 86_400) }),
};
const body = `${part({ alg: 'EdDSA', typ: 'JWT' })}.${part(claims)}`;
const key = createPrivateKey(readFileSync(positionals[0]!));
process.stdout.write(`${body}.${sign(null, Buffer.from(body), key).toString('base64url')}\n`);
