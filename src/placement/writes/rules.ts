// Each write rule once: a rule is declared here as data (which
// values, which comparison, which refusal) and both paths are derived from
// the declaration: the ordinary path's decision in TypeScript (brokenRule)
// and the one-batch path's guard in SQL (brokenSql), checked inside the write
// transaction. Changing a rule here changes both (test/write-model/rules.test.ts).
import { ALLOC, INV } from '../../db/columns.js';
import { capacityOf, capacitySql, usedSql, type InventoryLimits } from '../capacity.js';

/**
 * The values a rule compares: the amount one allocation asks, the usage of its
 * (provider, class) with it, the inventory's capacity and limits, or a constant.
 */
export type Operand = 'amount' | 'usage' | 'capacity' | 'minUnit' | 'maxUnit' | 'stepSize' | number;

export interface Rule<Refusal extends string = string> {
  left: Operand;
  /** The condition that must hold: left >= right, left <= right, or left a multiple of right. */
  holds: '>=' | '<=' | 'multipleOf';
  right: Operand;
  /** Which refusal a broken rule answers (the caller words it). */
  refusal: Refusal;
}

/**
 * An allocation of a claim, against the inventory of its (provider, class):
 * placement's unit constraints, then its capacity (usage counts every
 * allocation of the request so far; the ordinary path binds capacity only where
 * the claim raises usage, upstream bug 2104040, and a one-batch claim only raises it).
 */
export const CLAIM_RULES: readonly Rule<'constraints' | 'capacity'>[] = [
  { left: 'amount', holds: '>=', right: 'minUnit', refusal: 'constraints' },
  { left: 'amount', holds: '<=', right: 'maxUnit', refusal: 'constraints' },
  { left: 'amount', holds: 'multipleOf', right: 'stepSize', refusal: 'constraints' },
  { left: 'usage', holds: '<=', right: 'capacity', refusal: 'capacity' },
];

/** An inventory class a write removes: no allocation may still use it. */
export const REMOVAL_RULES: readonly Rule<'inUse'>[] = [{ left: 'usage', holds: '<=', right: 0, refusal: 'inUse' }];

/** Whether an inventory class with `usage` may not be removed (REMOVAL_RULES, in TypeScript). */
export const stillInUse = (usage: number): boolean => brokenRule(REMOVAL_RULES, { usage }) !== undefined;

/** The same, in SQL, for the inventories row aliased `alias` (its usage as of the write). */
export const stillInUseSql = (alias: string): string => brokenSql(REMOVAL_RULES, { inventory: alias });

/** The values of one check, in TypeScript. */
export interface RuleValues {
  amount?: number;
  usage?: number;
  inventory?: InventoryLimits;
}

function operandValue(operand: Operand, values: RuleValues): number {
  if (typeof operand === 'number') return operand;
  if (operand === 'amount' || operand === 'usage') return values[operand] ?? 0;
  const inv = values.inventory;
  if (!inv) throw new Error(`rule operand ${operand} needs an inventory`);
  return operand === 'capacity' ? capacityOf(inv) : inv[operand];
}

function holds(rule: Rule, values: RuleValues): boolean {
  const left = operandValue(rule.left, values);
  const right = operandValue(rule.right, values);
  if (rule.holds === '>=') return left >= right;
  if (rule.holds === '<=') return left <= right;
  return left % right === 0;
}

/** The first rule of `rules` that `values` break (declaration order), or undefined. */
export function brokenRule<R extends Rule>(rules: readonly R[], values: RuleValues): R | undefined {
  for (const rule of rules) if (!holds(rule, values)) return rule;
  return undefined;
}

/** Where a rule's values are in SQL: an expression for the amount and the usage, the inventories row's alias. */
export interface RuleSql {
  amount?: string;
  usage?: string;
  inventory: string;
}

function operandSql(operand: Operand, at: RuleSql): string {
  if (typeof operand === 'number') return String(operand);
  if (operand === 'amount' || operand === 'usage') {
    const sql = operand === 'amount' ? at.amount : (at.usage ?? usedSql(at.inventory));
    if (sql === undefined) throw new Error(`rule operand ${operand} has no SQL here`);
    return sql;
  }
  if (operand === 'capacity') return capacitySql(at.inventory);
  return `${at.inventory}.${INV[operand]}`;
}

/** An SQL condition, true when any of `rules` is broken by the values `at` names. */
export function brokenSql(rules: readonly Rule[], at: RuleSql): string {
  if (rules.length === 0) return 'false';
  return rules
    .map((rule) => {
      const left = operandSql(rule.left, at);
      const right = operandSql(rule.right, at);
      if (rule.holds === '>=') return `${left} < ${right}`;
      if (rule.holds === '<=') return `${left} > ${right}`;
      return `${left} % ${right} != 0`;
    })
    .map((c) => `(${c})`)
    .join(' OR ');
}

/**
 * The one-batch claim's condition for the consumers bound as `consumers`, as
 * of the write: every allocation found its inventory (their count is bound
 * first: the entries sent) and breaks none of `rules`, its usage being the
 * (provider, class)'s usage with the whole claim written.
 */
export function claimRulesHoldSql(rules: readonly Rule[], consumers: string): string {
  return `(SELECT count(*) = ? AND total(${brokenSql(rules, { amount: `mine.${ALLOC.used}`, inventory: 'i' })}) = 0
        FROM allocations mine JOIN inventories i
          ON i.${INV.resourceProviderId} = mine.${ALLOC.resourceProviderId} AND i.${INV.resourceClassId} = mine.${ALLOC.resourceClassId}
        WHERE mine.${ALLOC.consumerId} IN (${consumers}))`;
}
