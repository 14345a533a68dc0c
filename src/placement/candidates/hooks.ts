// What an extension may add to the candidates engine: query parameters, a
// read beside the trees (providers left out, a capacity rule) and a gate that
// answers a request with none before any search. The engine defines these
// hooks and calls them; src/ext implements them and the composition root
// (src/compose.ts) installs them. Nothing in this folder imports src/ext.
import type { InStatement, ResultSet } from '@libsql/client';
import type { CandidateRequest } from './parse.js';

/**
 * A query parameter an extension adds to GET /allocation_candidates (and to
 * what takes the same query: headroom, why-no-host, gangs). Taken out of the
 * query before upstream's parser sees it; any `ext_` name no installed
 * extension declares is left in, so upstream's parser refuses it with its
 * usual 400 (a stock request never changes meaning).
 */
export interface CandidateParam<T = unknown> {
  /** The query key, `ext_...`. */
  readonly name: string;
  /** The microversion it needs: below it the key is left to upstream's parser, which refuses it as any unknown key. */
  readonly since?: string;
  /** What GET /openapi.json says of it; a parameter without one is accepted but not listed. */
  readonly description?: string;
  /**
   * Its value, from every value the query gives it and the stock request
   * parsed so far (throws invalidQuery or badCandidateRequest, errors.ts).
   * Kept on the request's `ext`, under `name` (extParam reads it back).
   */
  parse(values: string[], request: CandidateRequest): T;
}

/** What the request carries for `param` (undefined when not given). */
export const extParam = <T>(request: CandidateRequest, param: CandidateParam<T>): T | undefined =>
  request.ext?.get(param.name) as T | undefined;

/** Who asks: the gates' context. */
export interface Caller {
  projectId: string | null;
}

/**
 * A request an extension answers with no candidates at all, before any search
 * (project limits: the request alone would cross the caller's limit).
 */
export interface CandidateGate {
  readonly name: string;
  /** The key why-no-host reports the refusal under. */
  readonly diagnosisKey: string;
  /** Why this request gets none; null: the search goes on. */
  refusal(request: CandidateRequest, caller: Caller): Promise<string | null>;
}

/** One piece of a candidate: an amount of a class on a provider. */
export interface Piece {
  providerId: number;
  classId: number;
  amount: number;
}

/** Amounts a search walk has taken so far, by provider (several groups may use one provider). */
export interface TakenView {
  forEachOn(providerId: number, visit: (classId: number, amount: number) => void): void;
}

/** A capacity condition beside the inventories' own (shared counters: several classes draw on one counter). */
export interface CapacityRule {
  /**
   * Whether `pieces` fit beside current usage. With `taken`, what the walk
   * holds on each piece's provider is what must fit (it includes the pieces).
   */
  fits(pieces: readonly Piece[], taken?: TakenView): boolean;
  /**
   * Where the rule bounds a pair by amount alone: the most that successive
   * claims of this request may add on (provider, class) beside the usage the
   * batch read (headroom repeats a claim within it); undefined where it does not.
   */
  room?(providerId: number, classId: number): number | undefined;
}

/**
 * A read-side extension of GET /allocation_candidates (and of what runs its
 * search: headroom, why-no-host). Its statement joins every read batch the
 * request makes, so it costs no round trip and reads the same snapshot as
 * the trees and their usage.
 */
export interface CandidateReadHook<State = unknown> {
  /** A name for errors and tests. */
  readonly name: string;
  /** The statement, given the class names the request asks for. */
  statement(classNames: readonly string[]): InStatement;
  /** Its result, read back. */
  read(result: ResultSet | undefined): State;
  /** Providers the request leaves out: never a choice, and a root here takes its whole tree out. */
  excludeProviders?(state: State, request: CandidateRequest): ReadonlySet<number>;
  /**
   * A capacity condition the search applies to every choice of `request`,
   * judged at `nowMs` (the request's instant, on the app's clock); null when
   * it constrains nothing (the usual cloud).
   */
  capacityRule?(state: State, request: CandidateRequest, nowMs: number): CapacityRule | null;
}

/** What the installed hooks read in one batch, by hook (headroom reads the counters' state back). */
export class HookStates {
  private readonly states = new Map<CandidateReadHook, unknown>();

  set<State>(hook: CandidateReadHook<State>, state: State): void {
    this.states.set(hook as CandidateReadHook, state);
  }

  get<State>(hook: CandidateReadHook<State>): State | undefined {
    return this.states.get(hook as CandidateReadHook) as State | undefined;
  }

  /** The union of every hook's excluded providers (empty without any). */
  excluded(hooks: readonly CandidateReadHook[], request: CandidateRequest): ReadonlySet<number> {
    let excluded: Set<number> | null = null;
    for (const hook of hooks) {
      if (!hook.excludeProviders) continue;
      const some = hook.excludeProviders(this.states.get(hook), request);
      if (!some.size) continue;
      excluded ??= new Set();
      for (const id of some) excluded.add(id);
    }
    return excluded ?? NONE;
  }

  /** Every hook's capacity rule, as one; null when none constrains anything (the search then pays nothing). */
  capacityRule(hooks: readonly CandidateReadHook[], request: CandidateRequest, nowMs: number): CapacityRule | null {
    const rules: CapacityRule[] = [];
    for (const hook of hooks) {
      const rule = hook.capacityRule?.(this.states.get(hook), request, nowMs);
      if (rule) rules.push(rule);
    }
    if (rules.length <= 1) return rules[0] ?? null;
    return {
      fits: (pieces, taken) => rules.every((rule) => rule.fits(pieces, taken)),
      room(providerId, classId) {
        let least: number | undefined;
        for (const rule of rules) {
          const room = rule.room?.(providerId, classId);
          if (room !== undefined && (least === undefined || room < least)) least = room;
        }
        return least;
      },
    };
  }
}

const NONE: ReadonlySet<number> = new Set();

/** The hooks' statements, to append to a read batch. */
export const hookStatements = (hooks: readonly CandidateReadHook[], classNames: readonly string[]): InStatement[] =>
  hooks.map((hook) => hook.statement(classNames));

/** Reads the hooks' results (the batch's last `hooks.length` results). */
export function readHooks(hooks: readonly CandidateReadHook[], results: readonly (ResultSet | undefined)[]): HookStates {
  const states = new HookStates();
  hooks.forEach((hook, i) => {
    states.set(hook, hook.read(results[i]));
  });
  return states;
}
