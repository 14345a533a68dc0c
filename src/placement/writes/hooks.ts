// The write kernel's extension points: what an extension adds to a
// claim, declared here and called by claims.ts and reshape.ts; src/ext
// implements them and the composition root (src/compose.ts) installs them per
// app (Deps.writeHooks). src/placement never imports an extension.
//
// A claim guard adds, without a round trip of its own:
//   - statements to the claim's snapshot (the same read batch, so the same snapshot);
//   - the ordinary path's decision on what it read (after placement's own
//     checks, so upstream's order of errors is kept): a refusal carries the
//     guard's own error, with its own status and code;
//   - an SQL condition on the claim as written, checked inside the write
//     transaction: in the one-batch claim's guard always (refused, the claim
//     takes the ordinary path, which decides and words it), and in the ordinary
//     path's write batch too when the provider generations' compare-and-swap
//     does not protect what the guard read (a project's usage across providers):
//     refused there, the claim is decided again from a fresh snapshot. So two
//     racing writers never both pass it.
//
// A caller may also add statements to one claim's own batch (ClaimAlongside),
// what an extension must write with that claim or not at all (a gang's lease).
//
// What a delete cascades to an extension's rows (a provider's taints and
// counters, a consumer's lease) is declared by the extension's migration as
// triggers (drizzle/0006, 0007), so every path that deletes (the kernel, the
// lease sweep, a restore) cascades alike, and the kernel needs no hook for it.
import type { InStatement, ResultSet } from '@libsql/client';
import type { BatchReader } from '../../db/client.js';
import { guardSql, placeholders, type WriteStatement } from '../../db/write-batch.js';
import type { ConsumerClaim } from '../repo/allocations.js';
import type { ConsumerState, ProviderState } from './kernel.js';
import { CLAIM_RULES, claimRulesHoldSql, type Rule } from './rules.js';

/** One allocation of a claim, in body order. */
export interface ClaimEntry {
  consumer: string;
  provider: ProviderState;
  resourceClass: string;
  classId: number;
  amount: number;
}

/** What a claim leaves, as the ordinary path decided it, for a guard to judge. */
export interface ClaimView {
  claims: readonly ConsumerClaim[];
  entries: readonly ClaimEntry[];
  /** Providers that receive allocations, first appearance first. */
  providerIds: readonly number[];
  /** The claimed consumers as read (absent: new). */
  consumers: ReadonlyMap<string, ConsumerState>;
  /** When the claim is written (ISO 8601), by the app's clock. */
  now: string;
  /** The request's extension parameters (`ext_` names, as sent), for the guards whose extension declared them. */
  params: ReadonlyMap<string, string>;
  /** Usage of (provider, class) by every consumer, as read, and as the claim leaves it. */
  usedBefore(providerId: number, classId: number): number;
  usedAfter(providerId: number, classId: number): number;
}

/** A guard's refusal: the error answered; `resourceClass` counts it among the capacity refusals of that class. */
export interface ClaimRefusal {
  error: Error;
  resourceClass?: string;
}

/**
 * A guard's grant that holds only while what it read still holds (a
 * project's usage across providers): checks (guard() statements) added to the
 * ordinary path's write batch after the claim's writes, so as of the write; a
 * failing one is a lost race, and the claim is decided again from a fresh snapshot.
 */
export interface ClaimGrant {
  checks: WriteStatement[];
}

/**
 * What a caller writes with one claim, in the claim's own write batch after
 * its writes (so they see the claimed consumers and allocations): rows of an
 * extension that must stand or fall with the claim, as a gang's lease (POST
 * /ext/gangs). A failing one fails the claim: nothing is written. Unlike a
 * guard, these belong to one request, not to every claim of the app.
 */
export type ClaimAlongside = readonly WriteStatement[];

/** The decision a guard makes on its part of a snapshot: null grants. */
export type ClaimDecision = (claim: ClaimView) => ClaimRefusal | ClaimGrant | null;

export interface ClaimGuard {
  /** For messages and tests. */
  readonly name: string;
  /** Statements read beside placement's own in the claim's snapshot, for the providers, consumers and claims (their projects) it names. */
  snapshotStatements(providerUuids: string[], consumerUuids: string[], claims: readonly ConsumerClaim[]): InStatement[];
  /** The decision on their results (as many as snapshotStatements returned, in order). */
  decider(results: ResultSet[]): ClaimDecision;
  /**
   * An SQL condition, true when the claim as written may stand, as of the
   * write; `consumers` is a placeholder list bound to the claimed consumers' uuids.
   */
  holdsSql(consumers: string): string;
  /** What the guard reads is not protected by the providers' generations: its condition guards every claim batch. */
  beyondProviderGenerations?: boolean;
}

/**
 * The `ext_` query parameters an extension takes on a claim (PUT
 * /allocations/{c}, POST /allocations), and what a claim with them writes in
 * its own batch (ClaimAlongside): parsed here, so a malformed one is refused
 * (a DomainError) before anything is read or written.
 */
export interface ClaimParams {
  readonly names: readonly string[];
  alongside(params: ReadonlyMap<string, string>, claims: readonly ConsumerClaim[], nowMs: number): ClaimAlongside;
  /** Whether a claim with these parameters may be granted as sent (the one-batch claim); false where only the guards' decision can grant it. */
  asSent?(params: ReadonlyMap<string, string>): boolean;
}

/** A change to when a consumer's allocations end, made outside a claim (a lease renewed or confirmed: /ext/leases). */
export interface EndChange {
  consumer: string;
  /** The new end: a lease's expiry, or forever (Infinity) once confirmed. */
  endsAtMs: number;
  nowMs: number;
}

/**
 * A guard on an EndChange, for a rule that reads when allocations end
 * (holds): it reads what it needs, then refuses (its own error) or grants
 * with checks (guard() statements) that go first in the change's own write
 * batch, so a change that raced a claim or a hold is refused as of the write.
 */
export interface EndChangeGuard {
  readonly name: string;
  decide(reader: BatchReader, change: EndChange): Promise<ClaimRefusal | ClaimGrant | null>;
}

/** What one extension adds to the write kernel. */
export interface WriteExtension {
  claimGuards?: ClaimGuard[];
  claimParams?: ClaimParams;
  endGuards?: EndChangeGuard[];
}

/** A claim rule (rules.ts): what it refuses is worded by claims.ts. */
export type ClaimRule = Rule<'constraints' | 'capacity'>;

/** The hooks installed in one app, with the claim rules they are checked beside. */
export interface WriteHooks {
  readonly claimGuards: readonly ClaimGuard[];
  readonly claimRules: readonly ClaimRule[];
  /**
   * The one-batch claim's guard statement for `consumers` new consumers:
   * the claim rules, then every guard's condition; bound to the count of
   * entries, then the consumers' uuids once per part (built once per count).
   */
  claimFitsSql(consumers: number): string;
  /** The conditions of the guards beyond the providers' generations, ANDed ('' when none), for the ordinary path's batch. */
  everyBatchHoldsSql(consumers: number): string;
  /** The extensions' claim parameters (none: a claim takes no `ext_` parameter). */
  readonly claimParams: readonly ClaimParams[];
  /** The guards on a change of when allocations end. */
  readonly endGuards: readonly EndChangeGuard[];
}

/**
 * An SQL text per count of bound values, built once: a claim sends the same
 * few shapes over and over, and the same string each time is found in the
 * prepared-statement cache without hashing and comparing it anew.
 */
export function sqlByCount(build: (count: number) => string): (count: number) => string {
  const built = new Map<number, string>();
  return (count) => {
    let sql = built.get(count);
    if (sql === undefined) {
      sql = build(count);
      if (built.size < 64) built.set(count, sql);
    }
    return sql;
  };
}

const conditionsOf = (guards: readonly ClaimGuard[], count: number) => guards.map((g) => `(${g.holdsSql(placeholders(count))})`);

/**
 * The hooks of `extensions`, in the order given (a refusal of an earlier one
 * is answered first), beside `rules` (placement's own; a test passes others).
 */
export function writeHooks(extensions: readonly WriteExtension[], rules: readonly ClaimRule[] = CLAIM_RULES): WriteHooks {
  const claimGuards = extensions.flatMap((e) => e.claimGuards ?? []);
  const everyBatch = claimGuards.filter((g) => g.beyondProviderGenerations);
  return {
    claimGuards,
    claimParams: extensions.flatMap((e) => (e.claimParams ? [e.claimParams] : [])),
    endGuards: extensions.flatMap((e) => e.endGuards ?? []),
    claimRules: rules,
    claimFitsSql: sqlByCount((count) =>
      guardSql([claimRulesHoldSql(rules, placeholders(count)), ...conditionsOf(claimGuards, count)].join('\n      AND ')),
    ),
    everyBatchHoldsSql: sqlByCount((count) => conditionsOf(everyBatch, count).join(' AND ')),
  };
}

/** The statements the guards add to a snapshot, and how to split their results back. */
export function guardSnapshot(
  hooks: WriteHooks,
  providerUuids: string[],
  consumerUuids: string[],
  claims: readonly ConsumerClaim[],
): { statements: InStatement[]; deciders(results: ResultSet[]): ClaimDecision[] } {
  const parts = hooks.claimGuards.map((g) => g.snapshotStatements(providerUuids, consumerUuids, claims));
  return {
    statements: parts.flat(),
    deciders: (results) => {
      let at = 0;
      return hooks.claimGuards.map((g, i) => {
        const mine = results.slice(at, at + parts[i]!.length);
        at += parts[i]!.length;
        return g.decider(mine);
      });
    },
  };
}

/** Every end guard's decision on `change`, in order: the first refusal's error is thrown; else the grants' checks. */
export async function endChangeChecks(hooks: WriteHooks, reader: BatchReader, change: EndChange): Promise<WriteStatement[]> {
  const checks: WriteStatement[] = [];
  for (const g of hooks.endGuards) {
    const decision = await g.decide(reader, change);
    if (decision && 'error' in decision) throw decision.error;
    if (decision) checks.push(...decision.checks);
  }
  return checks;
}
